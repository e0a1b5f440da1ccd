"""Training: (1) steady-state steps/s of the demo fine-tune through the supervisor with the metrics
callback vs. the same Trainer run bare; (2) key-press-to-screen latency of the Training screen while
a job's log grows at 10,000 lines/s, vs. the same with a quiet log.

(1) Both runs build the same Trainer (`gaudi_tui.core.jobs.worker.train.build`: same spec, data, seed,
TrainingArguments) and start the same way: a child in its own session with the job's environment
(`launch.job_env`) and torch's threads pinned to THREADS on both sides. The bare one runs
`trainer.train()` without our callbacks (only a bench callback that notes the time of each log
step); the other is a real job through `control.submit` (detached supervisor, its launcher, the
stop check and metrics from rank 0, whose `log` events carry their time; the bench checks that
status.json names the supervisor and launcher and that metrics.jsonl holds a whole run). The figure
is steady state from the run's own timestamps: the seconds per step of every log window (5 steps)
from WARMUP_STEPS on, and 1 / their median, so process start, model load, the first slow steps and
a window hit by the scheduler do not count. Pairs interleave, the order swapped every pair; medians
with min–max, the ratio of each pair and of the pooled windows. Target: ratio ≥ 0.99. Beside them:
CPU seconds per steady step of the training process and of the supervisor (read from /proc at the
bench's looks; on a shared machine they move far less than the wall figures; `--threads 1` keeps a
busy machine from stalling torch's thread team too), and the callbacks alone (stop-flag check +
metrics lines) timed per step in this process, with the adaptive check interval and checking every
step, against the bare run's seconds per step.

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
from common.figures import load, spread  # noqa: E402

PAIRS = 4
STEPS = 200
WARMUP_STEPS = 40
THREADS = 2
"""torch's threads on both sides (OMP_NUM_THREADS): the same on every machine, so runs compare."""
KEY_SAMPLES = 20
FLOOD_LINES_PER_S = 10_000
LINE_BYTES = 62

BARE = r"""
import json, sys, time
from pathlib import Path
import torch
from transformers import TrainerCallback
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.worker import data
from gaudi_tui.core.jobs.worker.train import build
run = runfolder.RunFolder(Path(sys.argv[1]))
spec = run.spec()
built = build(run, spec, data.load_texts(spec.dataset, spec.text_field), monitor=False)
marks = []
class Stamp(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        marks.append((state.global_step, time.time()))
built.trainer.add_callback(Stamp())
built.trainer.train()
Path(sys.argv[2]).write_text(json.dumps({"threads": torch.get_num_threads(), "marks": marks}))
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
    """Both sides' environment: this tree first on the path, torch's thread count pinned."""
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), out.get("PYTHONPATH")) if p)
    out["OMP_NUM_THREADS"] = out["MKL_NUM_THREADS"] = str(THREADS)
    return out


@dataclass
class Run:
    """One training run's steady state (log steps from WARMUP_STEPS on)."""

    windows: list[float]
    """Seconds per step of each log window."""
    cpu_per_step: float
    """CPU seconds (user + system, all threads) of the training process per step."""
    supervisor_per_step: float = 0.0
    """The supervisor's CPU seconds per step."""

    @property
    def rate(self) -> float:
        """Steps per second: 1 / the median window (a scheduling hiccup moves one window, not the figure)."""
        return 1.0 / statistics.median(self.windows)


def steady(marks: list[tuple[int, float]]) -> list[tuple[int, float]]:
    out = [(step, at) for step, at in marks if step >= WARMUP_STEPS]
    if len(out) < 11:
        raise RuntimeError(f"only {len(out)} log steps after the warm-up: {marks}")
    return out


def windows(marks: list[tuple[int, float]]) -> list[float]:
    """Seconds per step between consecutive log steps after the warm-up."""
    after = steady(marks)
    return [(t1 - t0) / (s1 - s0) for (s0, t0), (s1, t1) in zip(after, after[1:], strict=False) if s1 > s0]


def step_at(marks: list[tuple[int, float]], at: float) -> float:
    """The (fractional) step the run was at, at wall time `at`, between two log steps."""
    for (s0, t0), (s1, t1) in zip(marks, marks[1:], strict=False):
        if t0 <= at <= t1:
            return s0 + (s1 - s0) * (at - t0) / max(t1 - t0, 1e-9)
    raise ValueError(f"{at} is outside the log steps")


class CpuSamples:
    """Cumulative CPU seconds of named processes, read from /proc at each of the bench's looks."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[float, float]]] = {}

    def take(self, **procs: psutil.Process | None) -> None:
        now = time.time()
        for name, proc in procs.items():
            try:
                if proc is not None:
                    times = proc.cpu_times()
                    self.rows.setdefault(name, []).append((now, times.user + times.system))
            except psutil.Error:
                pass

    def per_step(self, name: str, marks: list[tuple[int, float]]) -> float:
        """CPU seconds per step between the first and last look inside the steady part."""
        after = steady(marks)
        inside = [(t, c) for t, c in self.rows.get(name, []) if after[0][1] <= t <= after[-1][1]]
        if len(inside) < 3:
            raise RuntimeError(f"too few CPU samples of the {name} in the steady part ({len(inside)})")
        (ta, ca), (tb, cb) = inside[0], inside[-1]
        return (cb - ca) / (step_at(after, tb) - step_at(after, ta))


def wait(done: Callable[[], bool], on_tick: Callable[[], None]) -> None:
    """Both sides wait the same way: a look every 0.5 s, for at most 900 s."""
    deadline = time.monotonic() + 900
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError("a training run did not end within 900 s")
        on_tick()
        time.sleep(0.5)


def bare_run() -> Run:
    """The same Trainer in one plain child started as the job's launcher would be: the job's env and cwd."""
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.jobs import launch, runfolder

    spec = launch.prepare(bench_spec(name="bare"), Accelerator("cpu", "bench"))
    run = runfolder.create(spec, accelerator="cpu")
    result = run.path / "bare.json"
    with run.log_path.open("ab") as log:
        child = subprocess.Popen(
            [sys.executable, "-c", BARE, str(run.path), str(result)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=launch.job_env(run, spec, env()), cwd=run.path, start_new_session=True,
        )  # fmt: skip
    cpu, proc = CpuSamples(), psutil.Process(child.pid)
    try:
        wait(lambda: child.poll() is not None, lambda: cpu.take(training=proc))
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
    if child.returncode != 0 or not result.exists():
        raise RuntimeError(f"bare run failed (exit {child.returncode}): {run.log_path.read_text()[-800:]}")
    out = json.loads(result.read_text())
    if out["threads"] != THREADS:
        raise RuntimeError(f"the bare run used {out['threads']} torch threads, not {THREADS}")
    marks = [(int(step), float(at)) for step, at in out["marks"]]
    return Run(windows(marks), cpu.per_step("training", marks))


def supervised_run() -> Run:
    """A real job: `control.submit`, the detached supervisor, its launcher, our callbacks in the rank."""
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.jobs import control
    from gaudi_tui.core.jobs.status import TERMINAL

    run = control.submit(bench_spec(name="supervised"), Accelerator("cpu", "bench"), env=env())
    cpu = CpuSamples()

    def look() -> None:  # the single-process launcher is the training process itself
        status = run.status()
        if status is not None:
            cpu.take(
                supervisor=status.supervisor.process() if status.supervisor else None,
                training=status.launcher.process() if status.launcher else None,
            )

    wait(lambda: (s := run.status()) is not None and s.state in TERMINAL, look)
    status = run.status()
    if status is None or status.state != "succeeded":
        raise RuntimeError(f"supervised run {status and status.state}: {status and status.error}")
    if status.supervisor is None or status.supervisor.pid == os.getpid() or status.launcher is None:
        raise RuntimeError(f"the supervised run did not go through a supervisor and launcher: {status}")
    if "gaudi_tui.core.jobs.worker.train" not in status.command:
        raise RuntimeError(f"the launcher was not the training process itself: {status.command}")
    events = [json.loads(line) for line in run.metrics_path.read_text().splitlines()]
    if [e["event"] for e in events[:1] + events[-1:]] != ["begin", "end"] or events[-1]["stopped"]:
        raise RuntimeError("metrics.jsonl does not hold the metrics callback's begin … end of a whole run")
    marks = [(int(e["step"]), float(e["time"])) for e in events if e.get("event") == "log"]
    return Run(windows(marks), cpu.per_step("training", marks), cpu.per_step("supervisor", marks))


def throughput(pairs: int) -> float:
    """Returns the bare runs' median seconds per step (for the callbacks' share)."""
    bare: list[Run] = []
    supervised: list[Run] = []
    for i in range(pairs):  # interleaved pairs, the order swapped every pair (a drifting load cancels)
        sides = [(bare, bare_run), (supervised, supervised_run)]
        for runs, one in sides if i % 2 == 0 else sides[::-1]:
            runs.append(one())
    b, s = [r.rate for r in bare], [r.rate for r in supervised]
    print(
        f"demo fine-tune ({STEPS} steps, batch 8, seq ≤ 64, CPU, {THREADS} torch threads both sides), {pairs} "
        f"interleaved pairs; steady state = 1 / the median seconds per step of the log windows "
        f"(every 5 steps) from step {WARMUP_STEPS} on; {load()}:"
    )
    print(f"  bare Trainer                                     {spread(b)} steps/s")
    print(f"  through the supervisor with the metrics callback {spread(s)} steps/s")
    ratios = [x / y for x, y in zip(s, b, strict=True)]
    print(f"  ratio per pair {spread(ratios, '{:.3f}')} (target ≥ 0.99)")
    pooled_b = statistics.median(w for r in bare for w in r.windows)
    pooled_s = statistics.median(w for r in supervised for w in r.windows)
    print(f"  ratio of the pooled windows {pooled_b / pooled_s:.3f}; spread of the runs (max/min − 1): "
          f"bare {max(b) / min(b) - 1:.1%}, supervised {max(s) / min(s) - 1:.1%}")  # fmt: skip
    cb = [r.cpu_per_step * 1000 for r in bare]
    cs = [r.cpu_per_step * 1000 for r in supervised]
    sup = [r.supervisor_per_step * 1000 for r in supervised]
    total = statistics.median(cs) + statistics.median(sup)
    print(f"  CPU per step (moves less with the load): bare {spread(cb)} ms; supervised: the training "
          f"process {spread(cs)} ms + the supervisor {spread(sup, '{:.3f}')} ms; "
          f"ratio bare / supervised {statistics.median(cb) / total:.3f}")  # fmt: skip
    return pooled_b


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
    print(f"{spread([x * 1e6 for x in every], '{:.1f}')} µs checking every step ({load()})")
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
    size_mb = (run.log_path.stat().st_size - size) / 2**20
    q, f = statistics.median(quiet), statistics.median(flooded)
    p90 = sorted(flooded)[int(0.9 * len(flooded))]
    print(f"key-press-to-screen (tmux, 100x30), {KEY_SAMPLES} presses each; {load()}:")
    print(f"  quiet log {spread([x * 1000 for x in quiet], '{:.0f}')} ms")
    print(f"  log flooding at {rate:,.0f} lines/s {spread([x * 1000 for x in flooded], '{:.0f}')} ms "
          f"(p90 {p90 * 1000:.0f} ms; the log grew {size_mb:.0f} MB)")  # fmt: skip
    print(f"  ratio flooded/quiet {f / q:.2f}; median {f * 1000:.0f} ms (target < 100 ms)")


def main() -> int:
    global THREADS, STEPS  # noqa: PLW0603 - set once from the command line, read by the runs
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["all", "throughput", "callback", "latency"], default="all")
    parser.add_argument("--pairs", type=int, default=PAIRS, help="interleaved bare/supervised pairs")
    parser.add_argument("--threads", type=int, default=THREADS, help="torch threads on both sides")
    parser.add_argument("--steps", type=int, default=STEPS, help="training steps of each run")
    args = parser.parse_args()
    THREADS, STEPS = args.threads, args.steps
    part = args.part
    os.environ["GAUDI_TUI_HOME"] = tempfile.mkdtemp(prefix="gaudi-tui-bench-train-")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    try:
        per_step = throughput(args.pairs) if part in ("all", "throughput") else None
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
