"""Training: (1) steady-state steps/s of the demo fine-tune through the supervisor with the metrics
callback vs. the same Trainer run bare; (2) key-press-to-screen latency of the Training screen while
a job's log grows at 10,000 lines/s, vs. the same with a quiet log.

(1) Both runs build the same Trainer (`gaudi_tui.core.jobs.worker.train.build`: same spec, data, seed,
TrainingArguments); the bare one runs `trainer.train()` in a plain child process without our
callbacks (only a bench callback that notes the time of each log step), the other is a real job
(detached supervisor, STOP check every step, metrics from rank 0, whose `log` events carry their
time). The figure is steady state: steps per second between the first log step after WARMUP_STEPS
and the last one, from the run's own timestamps, so process start, model load and the first slow
steps do not count. Runs alternate (RUNS pairs); medians with min–max, and the ratio of each pair.
Target: ratio ≥ 0.99. The callbacks alone (stop-flag check + metrics lines) are timed per step in
this process, with the adaptive check interval and checking every step, against the bare run's
seconds per step.

(2) The panel runs in tmux at 100×30 next to a real training job; a helper appends 10,000
lines/s to that job's stdout.log (the panel reads the file, so it cannot tell who wrote them).
Each sample sends `l` or `c` (Log / Charts tab) and polls `tmux capture-pane` until the new tab
is on screen. Target: median < 100 ms. Skipped without tmux.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = 3
STEPS = 300
WARMUP_STEPS = 50
KEY_SAMPLES = 30
FLOOD_LINES_PER_S = 10_000
LINE_BYTES = 62

BARE = r"""
import json, sys, time
from transformers import TrainerCallback
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.worker import data
from gaudi_tui.core.jobs.worker.train import build
run = runfolder.RunFolder(__import__("pathlib").Path(sys.argv[1]))
spec = run.spec()
built = build(run, spec, data.load_texts(spec.dataset, spec.text_field), monitor=False)
marks = []
class Stamp(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        marks.append((state.global_step, time.time()))
built.trainer.add_callback(Stamp())
built.trainer.train()
print("RESULT " + json.dumps(marks), flush=True)
"""

FLOOD = r"""
import sys, time
path, rate = sys.argv[1], int(sys.argv[2])
line = "flood-line {:09d} " + "x" * 40 + "\n"  # LINE_BYTES
n = 0
start = time.monotonic()
with open(path, "a", buffering=1 << 16) as fh:
    while True:
        due = int((time.monotonic() - start) * rate)
        if due > n:
            fh.write("".join(line.format(i) for i in range(n, due)))
            fh.flush()
            n = due
        time.sleep(0.005)
"""


def bench_spec(**changes: object):  # noqa: ANN201 - JobSpec (imported after GAUDI_TUI_HOME is set)
    from dataclasses import replace

    from gaudi_tui.core.jobs.spec import PRESETS

    settings: dict[str, object] = {"device": "cpu", "max_steps": STEPS, "max_seq_len": 64, "batch_size": 8}
    return replace(PRESETS["demo fine-tune"], **{**settings, **changes})


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), out.get("PYTHONPATH")) if p)
    return out


def steady_rate(marks: list[tuple[int, float]]) -> float:
    """Steps per second between the first log step after the warm-up and the last one."""
    steady = [(step, at) for step, at in marks if step >= WARMUP_STEPS]
    (first_step, first_at), (last_step, last_at) = steady[0], steady[-1]
    if last_step <= first_step:
        raise RuntimeError(f"too few log steps after the warm-up: {marks}")
    return (last_step - first_step) / (last_at - first_at)


def bare_run() -> float:
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.jobs import launch, runfolder

    spec = launch.prepare(bench_spec(name="bare"), Accelerator("cpu", "bench"))
    run = runfolder.create(spec, accelerator="cpu")
    done = subprocess.run(
        [sys.executable, "-c", BARE, str(run.path)], capture_output=True, text=True, env=env(), timeout=900
    )
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return steady_rate([(int(step), float(at)) for step, at in json.loads(line[7:])])
    raise RuntimeError(f"bare run failed: {done.stderr[-800:]}")


def supervised_run() -> float:
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.jobs import control
    from gaudi_tui.core.jobs.status import TERMINAL

    run = control.submit(bench_spec(name="supervised"), Accelerator("cpu", "bench"), env=env())
    deadline = time.monotonic() + 900
    while (status := run.status()) is None or status.state not in TERMINAL:
        if time.monotonic() > deadline:
            raise RuntimeError("the supervised run did not end within 900 s")
        time.sleep(0.5)
    if status.state != "succeeded":
        raise RuntimeError(f"supervised run {status.state}: {status.error}")
    events = [json.loads(line) for line in run.metrics_path.read_text().splitlines()]
    return steady_rate([(int(e["step"]), float(e["time"])) for e in events if e.get("event") == "log"])


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(statistics.median(values))} (min {fmt.format(min(values))}, max {fmt.format(max(values))})"


def throughput() -> float:
    """Returns the bare run's median seconds per step (for the callback's share)."""
    bare: list[float] = []
    supervised: list[float] = []
    for _ in range(RUNS):
        bare.append(bare_run())
        supervised.append(supervised_run())
    b = statistics.median(bare)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"demo fine-tune ({STEPS} steps, batch 8, seq ≤ 64, CPU), {RUNS} alternating pairs, steady state "
        f"(log steps ≥ {WARMUP_STEPS}), load average {load}:"
    )
    print(f"  bare Trainer                                     {spread(bare)} steps/s")
    print(f"  through the supervisor with the metrics callback {spread(supervised)} steps/s")
    pairs = [x / y for x, y in zip(supervised, bare, strict=True)]
    print(f"  ratio per pair {spread(pairs, '{:.3f}')} (target ≥ 0.99)")
    print(
        f"  spread of the runs (max/min − 1): bare {max(bare) / min(bare) - 1:.1%}, supervised "
        f"{max(supervised) / min(supervised) - 1:.1%}"
    )
    return 1.0 / b


def callback_cost(seconds_per_step: float | None, steps: int = 3000) -> None:
    """Our two callbacks alone, per training step (world size 1, logging every 5 steps)."""
    from types import SimpleNamespace

    from transformers import TrainerControl, TrainerState

    from gaudi_tui.core.jobs import runfolder
    from gaudi_tui.core.jobs.worker import callbacks
    from gaudi_tui.core.jobs.worker.callbacks import CountingCollator, MetricsCallback, StopCallback

    run = runfolder.RunFolder(Path(tempfile.mkdtemp(dir=os.environ["GAUDI_TUI_HOME"])))
    logs = {"loss": 1.0, "grad_norm": 0.5, "learning_rate": 1e-3, "epoch": 0.1}

    def per_step(check_every_s: float) -> float:
        callbacks.CHECK_EVERY_S = check_every_s
        stop = StopCallback(callbacks.stop_file_flag(run))
        metrics = MetricsCallback(run, "cpu", CountingCollator(None), 8, None, stop)
        args = SimpleNamespace(world_size=1, output_dir=str(run.checkpoints_dir))
        state, control = TrainerState(max_steps=steps), TrainerControl()
        state.is_world_process_zero = True
        for cb in (stop, metrics):
            cb.on_train_begin(args, state, control)
        start = time.perf_counter()
        for step in range(1, steps + 1):
            state.global_step = step
            stop.on_step_end(args, state, control)
            metrics.on_step_end(args, state, control)
            if step % 5 == 0:
                metrics.on_log(args, state, control, logs=logs)
        elapsed = time.perf_counter() - start
        metrics.on_train_end(args, state, control)
        return elapsed / steps

    adaptive = [per_step(0.5) for _ in range(3)]
    every = [per_step(0.0) for _ in range(3)]
    print(f"callbacks alone, per step ({steps} steps, a log line every 5): ", end="")
    print(f"{spread([x * 1e6 for x in adaptive], '{:.1f}')} µs with the adaptive stop check, ", end="")
    print(f"{spread([x * 1e6 for x in every], '{:.1f}')} µs checking every step")
    if seconds_per_step:
        share = statistics.median(adaptive) / seconds_per_step
        print(f"  = {share * 100:.3f} % of the bare run's {seconds_per_step * 1000:.1f} ms per step")


class Panel:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, env=env())
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "panel")

    def wait(self, test, timeout: float = 60.0) -> float:  # noqa: ANN001 - str -> bool
        start = time.perf_counter()
        while time.perf_counter() - start < timeout:
            if test(self.screen()):
                return time.perf_counter() - start
        raise RuntimeError(f"the panel did not show the expected screen:\n{self.screen()}")


def key_latency(panel: Panel, samples: int) -> list[float]:
    """Time from sending a tab key to the new tab being on screen."""
    on_charts = lambda s: "learning rate" in s  # noqa: E731 - the charts' titles
    on_log = lambda s: "Details" in s and not on_charts(s)  # noqa: E731 - tabs shown, charts gone
    out: list[float] = []
    for i in range(samples):
        key, shown = ("l", on_log) if i % 2 == 0 else ("c", on_charts)
        panel.tmux("send-keys", "-t", "panel", key)
        out.append(panel.wait(shown, timeout=10))
        time.sleep(0.05)
    return out


def latency() -> None:
    if shutil.which("tmux") is None:
        print("key latency: skipped (tmux is not installed)")
        return
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.jobs import control
    from gaudi_tui.core.jobs.status import TERMINAL

    run = control.submit(bench_spec(name="flood", max_steps=100_000), Accelerator("cpu", "bench"), env=env())
    panel = Panel(f"gaudi-tui-bench-{os.getpid()}")
    command = f"exec {shlex.quote(sys.executable)} -m gaudi_tui"
    panel.tmux("new-session", "-d", "-s", "panel", "-x", "100", "-y", "30", command)
    flood = None
    try:
        panel.wait(lambda s: "cpu: " in s)
        panel.tmux("send-keys", "-t", "panel", "4")
        panel.wait(lambda s: "running" in s, timeout=120)
        quiet = key_latency(panel, KEY_SAMPLES)
        size = run.log_path.stat().st_size
        flood = subprocess.Popen([sys.executable, "-c", FLOOD, str(run.log_path), str(FLOOD_LINES_PER_S)])
        time.sleep(1.0)
        started, start_size = time.monotonic(), run.log_path.stat().st_size
        flooded = key_latency(panel, KEY_SAMPLES)
        rate = (run.log_path.stat().st_size - start_size) / LINE_BYTES / (time.monotonic() - started)
    finally:
        if flood is not None:
            flood.kill()
            flood.wait()
        panel.tmux("kill-server")
        control.kill(run)
        while run.status().state not in TERMINAL:  # the folder is deleted afterwards: let it finish
            time.sleep(0.5)
    q, f = statistics.median(quiet), statistics.median(flooded)
    print(f"key-press-to-screen (tmux, 100x30): quiet log {q * 1000:.0f} ms, ", end="")
    print(
        f"log flooding at {rate:,.0f} lines/s {f * 1000:.0f} ms (p90 {sorted(flooded)[int(0.9 * len(flooded))] * 1000:.0f} ms)"
    )
    print(f"  (log grew {(run.log_path.stat().st_size - size) / 2**20:.0f} MB during the run)")
    print(
        f"ratio flooded/quiet {f / q:.2f}; median {f * 1000:.0f} ms (target < 100 ms), {KEY_SAMPLES} presses each"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["all", "throughput", "callback", "latency"], default="all")
    part = parser.parse_args().part
    os.environ["GAUDI_TUI_HOME"] = tempfile.mkdtemp(prefix="gaudi-tui-bench-train-")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    try:
        per_step = throughput() if part in ("all", "throughput") else None
        if part in ("all", "throughput", "callback"):
            callback_cost(per_step)
        if part in ("all", "latency"):
            latency()
    except RuntimeError as error:
        print(f"bench/train.py: could not measure: {error}", file=sys.stderr)
        return 1
    shutil.rmtree(os.environ["GAUDI_TUI_HOME"], ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
