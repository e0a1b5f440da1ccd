"""One demo fine-tune through the real job path, timed: the local-against-cluster benches' unit."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
STEPS = 60
WARMUP_STEPS = 20


def spec(**changes: object):  # noqa: ANN201 - JobSpec (imported after GAUDI_TUI_HOME is set)
    """The demo fine-tune both sides of a comparison run: 2 CPU processes, STEPS steps."""
    from dataclasses import replace

    from gaudi_tui.core.jobs.spec import PRESETS

    base: dict[str, object] = {
        "device": "cpu",
        "max_steps": STEPS,
        "max_seq_len": 64,
        "batch_size": 8,
        "logging_steps": 5,
        "processes": 2,
        "env": {"PYTHONPATH": str(ROOT)},
    }
    return replace(PRESETS["demo fine-tune"], **{**base, **changes})


def steady_rate(events: list[dict]) -> float:
    """Steps per second in steady state: 1 / the median seconds per step of the log windows from
    WARMUP_STEPS on (process start, the first slow steps and a window the scheduler hit do not count)."""
    marks = [(int(e["step"]), float(e["time"])) for e in events if e.get("event") == "log"]
    after = [(step, at) for step, at in marks if step >= WARMUP_STEPS]
    windows = [(t1 - t0) / (s1 - s0) for (s0, t0), (s1, t1) in zip(after, after[1:], strict=False) if s1 > s0]
    if len(windows) < 4:
        raise RuntimeError(f"only {len(windows)} log windows after step {WARMUP_STEPS}: {marks}")
    return 1.0 / statistics.median(windows)


def one_run(job) -> tuple[float, float]:  # noqa: ANN001 - JobSpec
    """(steady steps/s, seconds from submit to the first step) of one job."""
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.jobs import control
    from gaudi_tui.core.jobs.status import TERMINAL

    submitted = time.time()
    run = control.submit(job, Accelerator("cpu", "bench"))
    deadline = time.monotonic() + 600
    while (status := run.status()) is None or status.state not in TERMINAL:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{run.id} did not end in 600 s")
        time.sleep(0.5)
    if status.state != "succeeded":
        raise RuntimeError(f"{job.target} run {status.state}: {status.error}")
    events = [json.loads(line) for line in run.metrics_path.read_text().splitlines() if line.strip()]
    first = next(e for e in events if e.get("event") == "log")
    return steady_rate(events), float(first["time"]) - submitted


def alternating(first, second, runs: int) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:  # noqa: ANN001 - JobSpecs
    """`runs` timed runs of each spec, in pairs whose order alternates (first–second, then
    second–first: neither side always meets the machine warm or cold), after one untimed warm-up
    run of each (imports, the page cache, the cluster's first job: paid before either side counts)."""
    one_run(first)
    one_run(second)
    a: list[tuple[float, float]] = []
    b: list[tuple[float, float]] = []
    for i in range(runs):
        if i % 2 == 0:
            a.append(one_run(first))
            b.append(one_run(second))
        else:
            b.append(one_run(second))
            a.append(one_run(first))
    return a, b
