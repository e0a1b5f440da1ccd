"""Training: (1) steady-state steps/s of the demo fine-tune through the supervisor with the metrics
callback vs. the same Trainer run bare; (2) key-press-to-screen latency of the Training screen while
a job's log grows at 10,000 lines/s, vs. the same with a quiet log.

(1) Both runs build the same Trainer (`gaudi_tui.core.jobs.worker.train.build`: same spec, data, seed,
TrainingArguments) and start the same way: a child in its own session with the job's environment
(`launch.job_env`) and torch's threads pinned to THREADS on both sides. The bare one runs
`trainer.train()` without our callbacks (only a bench callback that stamps each log step); the
other is a real job through `control.submit` (detached supervisor, its launcher, the stop check and
metrics from rank 0, whose `log` events carry their time; the bench checks that status.json names
the supervisor and launcher and that metrics.jsonl holds the callback's lines). Each warms up
(WARMUP_STEPS) while the other is paused, then they take turns (`bench/common/timeslice.py`): one runs alone for
SLICE_S while the other is paused, PAIRS pairs, the order swapped every pair. Each side's figure in
a slice is the seconds per step between its own stamps inside that slice; the ratio of each pair
compares two slices seconds apart, so the machine's drift cancels (one after the other, the same run
moved 18–30 % here).

The headline figure (target ≥ 0.99) is CPU seconds per step, pair by pair: the bare training
process's over the supervised one's plus the supervisor's CPU in the same turn (the kernel's ns
clocks, read while stopped). Both turns of a pair run to the same step (STEPS_PER_TURN), so both
train on the same batches, and a turn's CPU over the steps it stamped is exact on both counts. On a shared
2-core machine the wall time of a turn moves with whoever else runs in it (the median wall ratio of
12 pairs moved 3.1 % across three runs); the CPU a process spends on a step moves with the work it
does, which is what the callbacks and the supervisor add (three runs, target spread < 2 %, in
docs/benches.md). Both sides do the same real work in the same turns, and the wall-time ratio per
pair is printed beside it. PAIRS is 50 (the median of more pairs moves less); turns are 20 steps
with one torch thread a side (THREADS says why). Time the callbacks spend blocked rather than on the CPU
(a slow disk under metrics.jsonl) would not show in CPU seconds: the wall ratio and the callbacks'
own timing per step below are there for that. Medians with min–max over the pairs. Also: the
callbacks alone (stop-flag check + metrics lines) timed per step in this process, with the adaptive
check interval and checking every step, against the bare run's seconds per step.

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

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
from common.figures import load, spread  # noqa: E402
from common.home import own_home  # noqa: E402
from common.timeslice import ENDLESS_STEPS, Marks, Side, Tail, cpu_ratios, pair_ratios, take_turns, warm_up  # noqa: E402

PAIRS = 50
SLICE_S = 3.0
"""A turn that has not reached its step in 10 of these is paused there (55 steps at ~55 ms a step)."""
STEPS_PER_TURN = 20
"""Each turn's steps (a multiple of the logging steps, 5): both turns of a pair run the same steps,
on the same batches."""
WARMUP_STEPS = 40
THREADS = 1
"""torch's threads on both sides (OMP_NUM_THREADS): the same on every machine, so runs compare. One,
not two: a team of two on a shared 2-core machine stalls whenever another process takes one of its
cores (each step's parallel regions wait for the descheduled thread, spinning): at load 4 a step
took 300–800 ms instead of ~35 ms and 0 of 20 pairs of 2 s turns held three stamps. One thread's
CPU a step moves only with its work (and its caches); the supervisor's CPU is still charged to the
supervised side, so the core it may use meanwhile is not free."""
KEY_SAMPLES = 20
FLOOD_LINES_PER_S = 10_000
LINE_BYTES = 62

BARE = r"""
import sys, time
from pathlib import Path
import torch
from transformers import TrainerCallback
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.worker import data
from gaudi_tui.core.jobs.worker.train import build
run = runfolder.RunFolder(Path(sys.argv[1]))
spec = run.spec()
built = build(run, spec, data.load_texts(spec.dataset, spec.text_field), monitor=False)
stamps = open(sys.argv[2], "a", buffering=1)
stamps.write(f"threads {torch.get_num_threads()}\n")
class Stamp(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        stamps.write(f"{state.global_step} {time.time()}\n")
built.trainer.add_callback(Stamp())
built.trainer.train()
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

    settings: dict[str, object] = {
        "device": "cpu",
        "max_steps": ENDLESS_STEPS,
        "max_seq_len": 64,
        "batch_size": 8,
    }
    return replace(PRESETS["demo fine-tune"], **{**settings, **changes})


def env() -> dict[str, str]:
    """Both sides' environment: this tree first on the path, torch's thread count pinned."""
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), out.get("PYTHONPATH")) if p)
    out["OMP_NUM_THREADS"] = out["MKL_NUM_THREADS"] = str(THREADS)
    return out


def bare_run() -> tuple[subprocess.Popen[bytes], Side]:
    """The same Trainer in one plain child started as the job's launcher would be: the job's env and cwd."""
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.jobs import launch, runfolder

    spec = launch.prepare(bench_spec(name="bare"), Accelerator("cpu", "bench"))
    run = runfolder.create(spec, accelerator="cpu")
    stamps = run.path / "stamps.txt"
    with run.log_path.open("ab") as log:
        child = subprocess.Popen(
            [sys.executable, "-c", BARE, str(run.path), str(stamps)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=launch.job_env(run, spec, env()), cwd=run.path, start_new_session=True,
        )  # fmt: skip

    tail = Tail(stamps, str.split)

    def marks() -> Marks:
        if child.poll() is not None:
            raise RuntimeError(f"bare run ended (exit {child.returncode}): {run.log_path.read_text()[-800:]}")
        lines = tail.read()
        if lines and lines[0] != ["threads", str(THREADS)]:
            raise RuntimeError(f"the bare run used {lines[0]} torch threads, not {THREADS}")
        return [(int(step), float(at)) for step, at in lines[1:]]

    return child, Side(psutil.Process(child.pid), marks)


def supervised_run():  # noqa: ANN201 - (RunFolder, Side, the supervisor's psutil.Process)
    """A real job: `control.submit`, the detached supervisor, its launcher, our callbacks in the rank."""
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.jobs import control

    run = control.submit(bench_spec(name="supervised"), Accelerator("cpu", "bench"), env=env())
    deadline = time.monotonic() + 120
    while (status := run.status()) is None or status.launcher is None or status.supervisor is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the supervised run named no supervisor and launcher in 120 s: {status}")
        time.sleep(0.2)
    if status.supervisor.pid == os.getpid() or "gaudi_tui.core.jobs.worker.train" not in status.command:
        raise RuntimeError(f"the launcher was not the training process under a supervisor: {status}")
    supervisor, training = status.supervisor.process(), status.launcher.process()
    if supervisor is None or training is None:
        raise RuntimeError(f"the supervised run's processes are gone: {status}")

    tail = Tail(run.metrics_path, json.loads)

    def marks() -> Marks:
        events = tail.read()
        if events and events[0]["event"] != "begin":
            raise RuntimeError(f"metrics.jsonl does not start with the callback's begin: {events[0]}")
        return [(int(e["step"]), float(e["time"])) for e in events if e.get("event") == "log"]

    return run, Side(training, marks, charged=supervisor)


def throughput(pairs: int) -> float:
    """Returns the bare run's median seconds per step (for the callbacks' share)."""
    from gaudi_tui.core.jobs import control
    from gaudi_tui.core.jobs.status import TERMINAL

    child, bare = bare_run()
    run = None
    try:  # one warms up while the other is paused: two thread teams on these cores stall each other
        warm_up(WARMUP_STEPS, bare)
        run, supervised = supervised_run()
        warm_up(WARMUP_STEPS, supervised)
        take_turns(bare, supervised, pairs, SLICE_S, steps_per_turn=STEPS_PER_TURN)
        b, s = bare.steps_per_s(), supervised.steps_per_s()
        ratios = pair_ratios(bare, supervised)
        cb = [x for x in bare.cpu_per_step() if x is not None]
        cs = [x for x in supervised.cpu_per_step() if x is not None]
        training_only = cpu_ratios(bare.cpu_per_step(), supervised.cpu_per_step())
        headline = cpu_ratios(bare.cpu_per_step(), supervised.charged_per_step())
        ticks = cpu_ratios(bare.cpu_per_step(bare.ticks), supervised.cpu_per_step(supervised.ticks))
        sup_ms = sum(supervised.charged_cpu) / sum(supervised.steps) * 1000
        bare_step = statistics.median(bare.seconds_per_step())
        per_step = statistics.median(supervised.seconds_per_step())
    finally:
        child.kill()
        child.wait()
        if run is not None:
            control.kill(run)
            deadline = time.monotonic() + 60  # the folder is deleted afterwards: let the job end
            while (
                time.monotonic() < deadline and (st := run.status()) is not None and st.state not in TERMINAL
            ):
                time.sleep(0.5)
    print(
        f"demo fine-tune (batch 8, seq ≤ 64, CPU, {THREADS} torch threads both sides), warmed up one at a time "
        f"to step {WARMUP_STEPS}, then {pairs} pairs of turns of {STEPS_PER_TURN} steps (one runs, the other "
        f"paused), both turns of a pair on the same steps: CPU over the steps stamped; {load()}:"
    )
    half = len(headline) // 2
    print(
        f"  CPU seconds a step, bare / (supervised + its supervisor's CPU in the same turns), per pair: "
        f"{spread(headline, '{:.3f}')} (target ≥ 0.99); first {half} pairs "
        f"{statistics.median(headline[:half]):.3f}, last {len(headline) - half} {statistics.median(headline[half:]):.3f}"
    )
    print("  per pair, in order: " + " ".join(f"{x:.3f}" for x in headline))
    print(f"  bare Trainer                                     {spread(b)} steps/s")
    print(f"  through the supervisor with the metrics callback {spread(s)} steps/s")
    print(f"  wall-time ratio per pair {spread(ratios, '{:.3f}')}")
    print("  per pair, in order: " + " ".join(f"{x:.3f}" for x in ratios))
    adjusted = [r * per_step / (per_step + sup_ms / 1000) for r in ratios]
    print(f"  with the supervisor's CPU in the supervised turns ({sup_ms:.3f} ms a step) "
          f"added to the supervised step: {spread(adjusted, '{:.3f}')}")  # fmt: skip
    print(f"  CPU per step of the training process (ns clock): bare {spread([x * 1000 for x in cb])} ms, "
          f"supervised {spread([x * 1000 for x in cs])} ms; per pair {spread(training_only, '{:.3f}')}; "
          f"from /proc/PID/stat's 10 ms ticks {spread(ticks, '{:.3f}')}")  # fmt: skip
    return bare_step


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
    global THREADS, SLICE_S, STEPS_PER_TURN  # noqa: PLW0603 - set once from the command line, read by the runs
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["all", "throughput", "callback", "latency"], default="all")
    parser.add_argument("--pairs", type=int, default=PAIRS, help="pairs of bare/supervised turns")
    parser.add_argument("--threads", type=int, default=THREADS, help="torch threads on both sides")
    parser.add_argument(
        "--slice", type=float, default=SLICE_S, help="a turn's unit of time (at most 10 of it)"
    )
    parser.add_argument(
        "--steps", type=int, default=STEPS_PER_TURN, help="steps of each turn, a multiple of 5"
    )
    args = parser.parse_args()
    THREADS, SLICE_S, STEPS_PER_TURN = args.threads, args.slice, args.steps
    part = args.part
    own_home("gaudi-tui-bench-train-")
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
