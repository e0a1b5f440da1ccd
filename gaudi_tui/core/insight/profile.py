"""A profile taken from a running job, with no restart: the request travels like STOP.

`request` writes `PROFILE` (JSON: the steps asked for) into the run folder, atomically, and refuses
while one is pending or being taken (`PROFILE.taking`). In the job, rank 0's callback calls
`ProfileTaker.step_end` between two steps: it claims the request (renames it to `PROFILE.taking`),
starts `torch.profiler.profile` (public API: CPU always; CUDA where torch sees a GPU; on Gaudi
`ProfilerActivity.HPU`, the activity Intel's profiling workflow records device work with:
https://docs.habana.ai/en/latest/Profiling/Profiling_Workflow.html), records N steps, stops, and
writes the Chrome/Perfetto trace as `profile-<step>.json` through a temporary file and a rename, so
a job that ends inside the window leaves a whole trace or none. It then gives a `profile` event:
the top ops by self time, host time against device time, and the step time inside the window
against the steps before it. On Gaudi the device time and the top device ops come from the events
Intel's profiler merges into the trace (`hpu_trace.py`). After `stop()` the job runs as before.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import deque
from pathlib import Path
from typing import Any

from gaudi_tui.core.insight import hpu_trace
from gaudi_tui.core.untrusted.data import Untrusted, integer
from gaudi_tui.core.untrusted.files import load_json

EVENT = "profile"
REQUEST = "PROFILE"
TAKING = "PROFILE.taking"
MAX_STEPS = 1000
DEFAULT_STEPS = 5
"""What `gaudi-tui jobs profile` and the Training screen's `P` ask for unless told."""
REQUEST_LIMIT = 4096
"""The most a request file (`{"steps": N, "time": T}`) may hold."""
TOP_OPS = 10
CHECK_EVERY_S = 0.5
"""How often (in training time) rank 0 looks for a request: one stat per half second, not per step
(a stat every step was most of the hooks' cost on a fast step: bench/why_slow.py)."""


def request(run_path: Path, steps: int) -> str | None:
    """Ask the job for a profile of `steps` steps; None when asked, else why not."""
    if not 1 <= steps <= MAX_STEPS:
        return f"--steps must be 1 to {MAX_STEPS}"
    if (busy := pending(run_path)) is not None:
        return busy
    tmp = run_path / f".{REQUEST}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"steps": steps, "time": time.time()}) + "\n", encoding="utf-8")
    os.replace(tmp, run_path / REQUEST)
    return None


def pending(run_path: Path) -> str | None:
    """Why a new request is refused now (one is being taken, or waits for the job), else None."""
    taking = run_path / TAKING
    if taking.exists():
        return f"a profile is being taken now ({_said(taking)}): wait for it to end"
    if (asked := run_path / REQUEST).exists():
        return f"a profile was asked for and the job has not begun it yet ({_said(asked)})"
    return None


def _said(path: Path) -> str:
    try:
        return f"{asked_steps(path)} steps"
    except (OSError, ValueError):
        return "its request is unreadable"


def asked_steps(path: Path) -> int:
    """The steps a request file asks for, 1 to MAX_STEPS: it lies in a run folder others may write,
    and the job reads it between two steps (untrusted.data: a NaN, an infinite or 5000-digit count
    or deep nesting raised out of the training callback). ValueError or OSError when it asks none."""
    asked = load_json(path, limit=REQUEST_LIMIT)
    steps = integer(asked.get("steps"), lo=1, hi=MAX_STEPS) if isinstance(asked, dict) else None
    if steps is None:
        raise Untrusted(f"the request asks for no number of steps from 1 to {MAX_STEPS}")
    return steps


def activities(device: str) -> list[Any]:
    """The profiler's activities for a device: CPU always, the device's where this torch has it."""
    from torch.profiler import ProfilerActivity

    chosen = [ProfilerActivity.CPU]
    if device == "cuda":
        chosen.append(ProfilerActivity.CUDA)
    elif device == "hpu" and hasattr(ProfilerActivity, "HPU"):
        chosen.append(ProfilerActivity.HPU)
    return chosen


class ProfileTaker:
    """Rank 0's side. `step_end` is cheap while nothing is asked: a clock read, and a stat of the
    request's path once every `CHECK_EVERY_S`."""

    def __init__(self, run_path: Path, device: str) -> None:
        self.run_path = run_path
        self.device = device
        self._request = os.fspath(run_path / REQUEST)
        self._next_check = 0.0
        self._prof: Any = None
        self._left = 0
        self._asked = 0
        self._first_step = 0
        self._began = 0.0
        self._last_end: float | None = None
        self._before: deque[float] = deque(maxlen=50)
        """Step times before the window (the newest 50)."""

    def busy(self) -> bool:
        return self._prof is not None

    def step_end(self, step: int) -> dict[str, object] | None:
        now = time.perf_counter()
        if self._prof is not None:
            self._last_end = now
            self._prof.step()
            self._left -= 1
            return self._finish(step) if self._left <= 0 else None
        if self._last_end is not None:
            self._before.append(now - self._last_end)
        self._last_end = now
        if now < self._next_check:
            return None
        self._next_check = now + CHECK_EVERY_S
        return self._start(step) if os.path.exists(self._request) else None

    def _start(self, step: int) -> dict[str, object] | None:
        taking = self.run_path / TAKING
        try:
            os.replace(self.run_path / REQUEST, taking)
            steps = asked_steps(taking)
        except (OSError, ValueError) as exc:
            with contextlib.suppress(OSError):
                taking.unlink()
            return {"event": EVENT, "time": time.time(), "step": step, "what": "refused", "reason": str(exc)}
        import torch.profiler

        self._prof = torch.profiler.profile(activities=activities(self.device))
        self._prof.start()
        self._left = self._asked = steps
        self._first_step, self._began = step + 1, time.perf_counter()
        return None

    def _finish(self, step: int) -> dict[str, object]:
        prof, self._prof = self._prof, None
        window_s = time.perf_counter() - self._began
        prof.stop()
        trace = self.run_path / f"profile-{step}.json"
        tmp = self.run_path / f".profile-{step}.{os.getpid()}.tmp"
        try:
            prof.export_chrome_trace(str(tmp))
            os.replace(tmp, trace)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
            with contextlib.suppress(OSError):
                (self.run_path / TAKING).unlink()
        figures = summary(prof)
        if self.device == "hpu" and (device := hpu_trace.device_figures(trace)) is not None:
            figures.update(device)  # Intel's device events: merged into the trace, not in key_averages
        self._last_end = time.perf_counter()  # writing (and reading) the trace is not a step
        return {
            "event": EVENT, "time": time.time(), "step": step, "what": "taken",
            "first_step": self._first_step, "steps": self._asked, "trace": str(trace),
            "activities": [str(a).rsplit(".", 1)[-1] for a in activities(self.device)],
            "step_s_inside": window_s / self._asked,
            "step_s_before": sorted(self._before)[len(self._before) // 2] if self._before else None,
            **figures,
        }  # fmt: skip

    def end(self, step: int) -> dict[str, object] | None:
        """Training ended inside a window: stop, write no trace, give the request back."""
        if self._prof is None:
            return None
        prof, self._prof = self._prof, None
        with contextlib.suppress(Exception):  # noqa: BLE001 - the job is ending; its trace is dropped
            prof.stop()
        with contextlib.suppress(OSError):
            (self.run_path / TAKING).unlink()
        return {"event": EVENT, "time": time.time(), "step": step, "what": "abandoned",
                "reason": f"training ended {self._left} steps before the window's end: no trace written"}  # fmt: skip


def summary(prof: Any) -> dict[str, object]:
    """The top ops by self time (host and device, µs), and the host and device totals."""
    averages = list(prof.key_averages())
    host = sum(float(getattr(a, "self_cpu_time_total", 0.0)) for a in averages)
    device = sum(float(getattr(a, "self_device_time_total", 0.0)) for a in averages)
    top = sorted(averages, key=lambda a: -float(getattr(a, "self_cpu_time_total", 0.0)))[:TOP_OPS]
    return {
        "host_us": host,
        "device_us": device,
        "top_ops": [
            {
                "name": a.key,
                "count": int(a.count),
                "self_host_us": float(a.self_cpu_time_total),
                "self_device_us": float(getattr(a, "self_device_time_total", 0.0)),
            }
            for a in top
        ],
    }


def _ms(value: object) -> str:
    return (
        f"{value / 1000:.1f} ms" if isinstance(value, (int, float)) and not isinstance(value, bool) else "?"
    )


def lines(event: dict) -> list[str]:
    """A `profile` event in words (the panel's side: read from metrics.jsonl, so every value is checked)."""
    what = event.get("what")
    if what != "taken":
        return [f"profile ({what}): {event.get('reason', '')}"]
    kinds = event.get("activities")
    recorded = ", ".join(str(k) for k in kinds) if isinstance(kinds, list) else "?"
    device = event.get("device_us")
    device_words = _ms(device) if device else "none recorded (a CPU run: no device activity)"
    out = [
        f"profile of steps {event.get('first_step')}–{event.get('step')} ({recorded}): trace {event.get('trace')}",
        f"  host {_ms(event.get('host_us'))}, device {device_words}",
    ]
    inside, before = event.get("step_s_inside"), event.get("step_s_before")
    if isinstance(inside, (int, float)):
        after = f", before it {_ms(before * 1e6)}" if isinstance(before, (int, float)) else ""
        out.append(f"  step time inside the window {_ms(inside * 1e6)}{after}")
    ops = event.get("top_ops")
    if isinstance(ops, list):
        out.append("  top ops by self time: " + _named(ops, "self_host_us"))
    on_device = event.get("top_device_ops")
    if isinstance(on_device, list):
        out.append(f"  top device ops ({event.get('device_source', '?')}): " + _named(on_device, "device_us"))
    return out


def _named(ops: list, figure: str) -> str:
    """The first five ops: name, `figure` in ms, count."""
    return ", ".join(
        f"{op.get('name')} {_ms(op.get(figure))} ×{op.get('count')}" for op in ops[:5] if isinstance(op, dict)
    )
