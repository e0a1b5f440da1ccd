"""Command jobs: (1) a user's Trainer script under the panel's wrapper vs. the same script bare;
(2) the output reader's throughput on 1 M Trainer log lines; (3) key-press-to-screen latency of the
Training screen while a command prints 10,000 lines/s.

(1) The script (tests/commands/scripts.py `HF_TRAINER`, the demo model, CPU, torch's threads pinned
to THREADS) runs twice: bare, as a plain child, and as a real command job (`control.submit`): the
supervisor with its output follower thread reading the script's log, the launcher, and the wrapper's
callback in the script (the stop check every step, metrics.jsonl lines). Each warms up to
WARMUP_STEPS while the other is paused; then they take turns (`bench/common/timeslice.py`): one runs
alone for SLICE_S while the other is paused (the job's whole process tree), PAIRS pairs, the order
swapped every pair. A turn's figure is the seconds per step between the log lines of every 5
steps inside that turn, stamped the same way on both sides: when the bench's poll first sees the
line in the file the script writes its output to (the bare script's own file, the job's stdout.log;
the callback's metrics.jsonl stamps are not used, the bare side has none). The ratio of each pair compares two turns seconds apart, so
the machine's drift cancels. Median with min–max. Target: ≥ 0.98. The callback's own cost per step
is then timed in this process (not moved by the machine's load).

(2) `OutputMetrics.feed` on a recorded Trainer output (transformers 5.24, tests/commands/data)
repeated to 1,000,000 lines (bar redraws and log dicts as Trainer writes them), in 64 KiB chunks as
the follower reads them; lines/s and MB/s, best of 3 and the median.

(3) The panel runs in tmux at 100×30 with a real command job selected whose script prints
10,000 lines/s (one JSON metric every 100 lines, so the follower and the charts work too). Each
sample sends `l` or `c` (Log / Charts tab) and polls `tmux capture-pane` until the tab is shown.
Target: median < 100 ms. Skipped without tmux.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
from common.figures import load, spread  # noqa: E402
from common.home import own_home  # noqa: E402
from common.timeslice import ENDLESS_STEPS, Side, Tail, Tree, pair_ratios, take_turns, warm_up  # noqa: E402

PAIRS = 10
SLICE_S = 2.0
THREADS = 2
WARMUP_STEPS = 20
LINES = 1_000_000
KEY_SAMPLES = 20
JOB_ENV = {
    "OMP_NUM_THREADS": str(THREADS),
    "MKL_NUM_THREADS": str(THREADS),
    "TOKENIZERS_PARALLELISM": "false",
}
"""Both sides' settings: torch's threads pinned, and what `launch.job_env` gives a job's launcher."""
FLOOD = """\
import json, os, sys, time
print("waiting for the go file", flush=True)
while not os.path.exists("go"):
    time.sleep(0.05)
rate, start, n = int(sys.argv[1]), time.monotonic(), 0
while True:
    for _ in range(100):
        n += 1
        sys.stdout.write(f"[rank0] iteration {n:>9} data loader says all is well, nothing to see\\n")
    sys.stdout.write(json.dumps({"step": n // 100, "loss": 10 / (1 + n / 1e5)}) + "\\n")
    sys.stdout.flush()
    ahead = n / rate - (time.monotonic() - start)
    if ahead > 0:
        time.sleep(ahead)
"""


def script_argv() -> list[str]:
    from gaudi_tui.core.demo import model_dir

    return [sys.executable, "train.py", "--model_name_or_path", str(model_dir()), "--train_file", "train.txt",
            "--output_dir", "out", "--max_steps", str(ENDLESS_STEPS), "--logging_steps", "5", "--disable_tqdm"]  # fmt: skip


def log_stamps(path: Path) -> Callable[[], list[tuple[int, float]]]:
    """The script's own output file, read as the turns poll it: each Trainer log line (one every 5
    steps, the k-th is step 5k) stamped when the bench first sees it. Both sides are stamped this
    one way, from the file the script itself writes (the bare script's, the job's stdout.log)."""
    tail = Tail(path, lambda line: ("{'loss'" in line, time.time()))

    def stamps() -> list[tuple[int, float]]:
        seen = [when for is_log, when in tail.read() if is_log]
        return [(5 * (k + 1), when) for k, when in enumerate(seen)]

    return stamps


def bare_run(folder: Path) -> tuple[subprocess.Popen[str], Side]:
    """The script started in `folder`, its output to a file of its own, as a job's goes to stdout.log."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", **JOB_ENV}
    output = folder / "bare.log"
    with output.open("w") as out:
        child = subprocess.Popen(
            script_argv(), cwd=folder, stdout=out, stderr=subprocess.STDOUT, text=True, env=env
        )
    stamps = log_stamps(output)

    def marks() -> list[tuple[int, float]]:
        if child.poll() is not None:
            raise RuntimeError(f"the bare script ended:\n{output.read_text()[-4000:]}")
        return stamps()

    return child, Side(psutil.Process(child.pid), marks)


def job_run(folder: Path):  # noqa: ANN201 - (RunFolder, Side)
    """The script as a real command job in `folder`; its steps are the callback's metrics.jsonl lines."""
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.jobs import control
    from gaudi_tui.core.jobs.spec import from_mapping
    from gaudi_tui.core.jobs.status import TERMINAL

    threads = dict(JOB_ENV)
    spec = {
        "kind": "command",
        "command": script_argv(),
        "workdir": str(folder),
        "device": "cpu",
        "env": threads,
    }
    run = control.submit(from_mapping(spec), Accelerator("cpu", "bench"))
    deadline = time.monotonic() + 60
    while (status := run.status()) is None or status.supervisor is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{run.id}: no supervisor after 60 s")
        time.sleep(0.1)

    stamps = log_stamps(run.log_path)

    def marks() -> list[tuple[int, float]]:
        now = run.status()
        if now is not None and now.state in TERMINAL:
            raise RuntimeError(f"the command job ended ({now.state}: {now.error})")
        return stamps()

    return run, Side(Tree(psutil.Process(status.supervisor.pid)), marks)


def wrapper_overhead() -> None:
    from gaudi_tui.core.jobs import control
    from gaudi_tui.core.jobs.status import TERMINAL
    from tests.commands import scripts

    root = Path(tempfile.mkdtemp(prefix="gaudi-tui-bench-cmd-"))
    for name in ("bare", "job"):
        (root / name).mkdir()
        scripts.write(root / name, "train.py", scripts.HF_TRAINER)
        scripts.train_file(root / name, lines=256)
    child, run = None, None
    try:
        child, bare = bare_run(root / "bare")
        warm_up(WARMUP_STEPS, bare)  # one warms up while the other is paused
        run, wrapped = job_run(root / "job")
        warm_up(WARMUP_STEPS, wrapped)
        take_turns(bare, wrapped, PAIRS, SLICE_S)
        if not (run.path / "wrapper.json").exists():
            raise RuntimeError("the wrapper's callback was not active in the command job")
        ratios = pair_ratios(bare, wrapped)  # fails, saying why, when too few turns could be measured
        b, w = bare.steps_per_s(), wrapped.steps_per_s()
        bare_step = statistics.median(bare.seconds_per_step())
    finally:
        if child is not None:
            child.kill()
            child.wait()
        if run is not None:
            control.kill(run)
            deadline = time.monotonic() + 60
            while (
                (status := run.status()) is not None
                and status.state not in TERMINAL
                and time.monotonic() < deadline
            ):
                time.sleep(0.2)
        shutil.rmtree(root, ignore_errors=True)
    print(f"Trainer script, CPU, {THREADS} torch threads, warmed up to step {WARMUP_STEPS}, then {PAIRS} pairs of "
          f"{SLICE_S:g} s turns (one runs, the other paused); {load()}:")  # fmt: skip
    print(f"  bare {spread(b)} steps/s, as a command job (supervisor, follower, wrapper) {spread(w)} steps/s")
    print(f"  ratio job/bare per pair {spread(ratios, '{:.3f}')} (target >= 0.98)")
    callback_cost(bare_step)


def callback_cost(seconds_per_step: float, steps: int = 3000) -> None:
    """The wrapper's callback alone, per step, in this process: every step's stop check (the
    adaptive interval) and a metrics line every 5 steps, as in the runs above; load hardly moves it."""
    from transformers import TrainerControl, TrainerState, TrainingArguments

    folder = Path(tempfile.mkdtemp(prefix="gaudi-tui-bench-cb-"))
    os.environ["GAUDI_TUI_RUN"] = str(folder)
    from gaudi_tui.core.jobs.worker.wrapped import PanelCallback

    args = TrainingArguments(output_dir=str(folder / "out"), use_cpu=True, report_to="none", max_steps=steps)
    per_step = []
    for _ in range(3):
        state, control = TrainerState(max_steps=steps), TrainerControl()
        callback = PanelCallback()
        callback.on_train_begin(args, state, control)
        began = time.perf_counter()
        for step in range(1, steps + 1):
            state.global_step = step
            callback.on_step_end(args, state, control)
            if step % 5 == 0:
                callback.on_log(
                    args, state, control, logs={"loss": 1.0, "grad_norm": 0.5, "learning_rate": 1e-4}
                )
        per_step.append((time.perf_counter() - began) / steps)
        callback.on_train_end(args, state, control)
    del os.environ["GAUDI_TUI_RUN"]
    shutil.rmtree(folder, ignore_errors=True)
    median = statistics.median(per_step)
    print(f"  the callback alone: {spread([x * 1e6 for x in per_step], '{:.1f}')} µs per step = "
          f"{median / seconds_per_step * 100:.3f} % of the bare run's {seconds_per_step * 1000:.0f} ms per step "
          f"(an expected ratio of {1 / (1 + median / seconds_per_step):.4f})")  # fmt: skip


def reader_throughput() -> None:
    from gaudi_tui.core.jobs.readers import OutputMetrics

    recorded = (ROOT / "tests" / "commands" / "data" / "trainer-5.24-tqdm.log").read_bytes().decode()
    start = recorded.index("\r  0%|")  # the training part: bars and dicts
    body = recorded[start : recorded.index("{'train_runtime'")]
    per_copy = body.count("\r") + body.count("\n")
    text = body * (LINES // per_copy + 1)
    chunks = [text[i : i + 65536] for i in range(0, len(text), 65536)]
    lines = per_copy * (LINES // per_copy + 1)
    times = []
    found = 0
    for _ in range(3):
        reader = OutputMetrics()
        began = time.perf_counter()
        for chunk in chunks:
            reader.feed(chunk)
        times.append(time.perf_counter() - began)
        found = reader.found
    megabytes = len(text.encode()) / 1e6
    best, median = min(times), statistics.median(times)
    print(f"output reader: {lines:,} Trainer log lines ({megabytes:.0f} MB, {found:,} metrics) in "
          f"{median:.2f} s median (best {best:.2f} s): {lines / median:,.0f} lines/s, {megabytes / median:.0f} MB/s ({load()})")  # fmt: skip


class Panel:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True).stdout

    def wait(self, test, timeout: float = 60.0) -> float:  # noqa: ANN001 - str -> bool
        start = time.perf_counter()
        while time.perf_counter() - start < timeout:
            if test(self.tmux("capture-pane", "-p", "-t", "panel")):
                return time.perf_counter() - start
        raise RuntimeError(
            "the panel did not show the expected screen:\n" + self.tmux("capture-pane", "-p", "-t", "panel")
        )


def key_latency() -> None:
    if shutil.which("tmux") is None:
        print("key latency: skipped (tmux is not installed)")
        return
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.jobs import control
    from gaudi_tui.core.jobs.spec import from_mapping
    from gaudi_tui.core.jobs.status import TERMINAL

    folder = Path(tempfile.mkdtemp(prefix="gaudi-tui-bench-flood-"))
    (folder / "flood.py").write_text(FLOOD, encoding="utf-8")
    spec = from_mapping({"kind": "command", "command": [sys.executable, "flood.py", "10000"],
                         "workdir": str(folder), "device": "cpu", "name": "flood"})  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = control.submit(spec, Accelerator("cpu", "bench"), env=env)
    panel = Panel(f"gaudi-tui-bench-cmd-{os.getpid()}")
    panel.tmux(
        "new-session",
        "-d",
        "-s",
        "panel",
        "-x",
        "100",
        "-y",
        "30",
        f"exec {shlex.quote(sys.executable)} -m gaudi_tui",
    )
    on_charts = lambda s: "learning rate" in s  # noqa: E731 - the charts' titles
    on_log = lambda s: "Details" in s and not on_charts(s)  # noqa: E731
    samples: list[float] = []
    quiet: list[float] = []
    try:
        panel.wait(lambda s: "cpu: " in s)
        panel.tmux("send-keys", "-t", "panel", "4")
        panel.wait(lambda s: "running" in s, timeout=120)
        quiet = presses(panel, on_log, on_charts)
        (folder / "go").touch()
        time.sleep(1.0)
        size, began = run.log_path.stat().st_size, time.monotonic()
        samples = presses(panel, on_log, on_charts)
        rate = (run.log_path.stat().st_size - size) / 72 / (time.monotonic() - began)
        metrics = sum(1 for _ in run.metrics_path.open())
    finally:
        panel.tmux("kill-server")
        control.kill(run)
        while run.status().state not in TERMINAL:
            time.sleep(0.5)
        shutil.rmtree(folder, ignore_errors=True)
    p90 = sorted(samples)[int(0.9 * len(samples))]
    q, f = statistics.median(quiet), statistics.median(samples)
    print(f"key-press-to-screen (tmux 100x30), a command job selected: quiet {q * 1000:.0f} ms; while it prints "
          f"~{rate:,.0f} lines/s ({metrics:,} metrics read from its output) {f * 1000:.0f} ms (p90 {p90 * 1000:.0f} ms); "
          f"ratio {f / q:.2f}; {KEY_SAMPLES} presses each (target < 100 ms; {load()})")  # fmt: skip


def presses(panel: Panel, on_log, on_charts) -> list[float]:  # noqa: ANN001 - str -> bool tests
    """Time from sending a tab key (`l`, `c` in turn) to the new tab being on screen."""
    out: list[float] = []
    for i in range(KEY_SAMPLES):
        key, shown = ("l", on_log) if i % 2 == 0 else ("c", on_charts)
        panel.tmux("send-keys", "-t", "panel", key)
        out.append(panel.wait(shown, timeout=10))
        time.sleep(0.05)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["all", "wrapper", "reader", "latency"], default="all")
    part = parser.parse_args().part
    own_home("gaudi-tui-bench-command-")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    if part in ("all", "reader"):
        reader_throughput()
    if part in ("all", "wrapper"):
        try:
            wrapper_overhead()
        except RuntimeError as error:
            print(
                f"bench/command.py: could not measure the wrapper's cost: {error}; {load()}", file=sys.stderr
            )
            return 1
    if part in ("all", "latency"):
        key_latency()
    shutil.rmtree(os.environ["GAUDI_TUI_HOME"], ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
