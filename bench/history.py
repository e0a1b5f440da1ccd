"""A year of runs: the Training screen and `gaudi-tui jobs --json` over 10, 100 and 1,000 run
folders, one of them a run of 1,000,000 metric lines (issue 28, item 1).

The folders are generated (bench/common/history.py): copies of the real finished run of
tests/jobs/data/runs/, and the long run as the newest, the one the screen selects. For each size,
in a GAUDI_TUI_HOME of its own:

- `jobs --json`: the wall time of the console script, start to exit, and its CPU time, RUNS times
  after a first run that has no index yet (printed apart; target ≤ 1 s);
- the panel itself (`python -m gaudi_tui`) in a real tmux pane at 120×40, started DRAWS times: once
  its start-up children have ended (the accelerator probe imports torch and Transformers for some
  seconds after the first frame: a key pressed meanwhile shares the cores with it), from the key `4`
  to the list drawn (the newest run and the one below it on the pane; target ≤ 0.5 s), in wall
  time, the panel's CPU time, its UI thread's time on a core and the time its threads waited for
  one (/proc/PID/task/*/schedstat: on a loaded machine the wall time less that wait is about what
  a quiet one shows); at the first start also to the charts of the long run drawn, their first open
  (issue 41: ≤ 1 s), from the series its supervisor kept in the run folder as the job ran (the
  generator keeps it as the supervisor does, and prints what that cost the supervisor); at the
  second, the same run as an older version left it (no kept series: the whole history read, off
  the UI thread; no target);
- its CPU over WINDOWS windows of WINDOW_S s, idle on the Training screen after the charts were
  drawn, in % of one core (/proc, all its threads; target ≤ 1 %);
- its memory at the end: RSS and PSS (target ≤ 100 MB), and its peak RSS (VmHWM) since it started.

The project's modules are byte-compiled first, as `pip install` leaves them (with
PYTHONDONTWRITEBYTECODE set, both the panel and `jobs --json` would otherwise compile them from
source at every start; bench/startup.py does the same).

Figures: median (min, max); the load average beside them (a shared machine moves them).
`--part jobs` measures only the first `jobs --json` (no index), RUNS times per size (the index
removed before each). Exit 1 only when it could not measure. BENCH_SIZES (e.g. 10 or 10,100) picks the sizes, BENCH_DRAWS
the panel starts per size, BENCH_LONG_STEPS the long run's length.
"""

from __future__ import annotations

import compileall
import itertools
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
from common.figures import load, spread  # noqa: E402
from common.history import LONG_ID, copy_id, make_runs  # noqa: E402
from common.home import own_home  # noqa: E402

SIZES = tuple(int(n) for n in os.environ.get("BENCH_SIZES", "10,100,1000").split(","))
LONG_STEPS = int(os.environ.get("BENCH_LONG_STEPS", "1000000"))
RUNS = 5
DRAWS = int(os.environ.get("BENCH_DRAWS", "3"))
WINDOWS = 3
WINDOW_S = 10.0
WAIT_S = 120.0
FINAL_LOSS = "loss 0.02841 "
STARTS = itertools.count()


class Tmux:
    """The panel in a real terminal: a tmux server of its own (stopped at the end)."""

    def __init__(self, home: Path) -> None:
        self.socket = f"gaudi-tui-bench-history-{os.getpid()}-{next(STARTS)}"  # a server per start
        command = (
            f"exec env GAUDI_TUI_HOME={shlex.quote(str(home))} {shlex.quote(sys.executable)} -m gaudi_tui"
        )
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.run("new-session", "-d", "-s", "panel", "-x", "120", "-y", "40", command, env=env)
        self.pid = int(self.run("display-message", "-p", "-t", "panel", "#{pane_pid}").strip())

    def run(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
            check=True,
        )
        return done.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "panel")

    def wait(self, *texts: str) -> float:
        """Seconds until the pane shows every text."""
        start = time.perf_counter()
        while not all(t in (shown := self.screen()) for t in texts):
            if time.perf_counter() - start > WAIT_S:
                raise RuntimeError(f"the panel did not show {texts} in {WAIT_S:.0f} s:\n{shown}")
            time.sleep(0.02)
        return time.perf_counter() - start

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


def cpu_s(pid: int) -> float:
    """user + system CPU of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[str]:
    """The PIDs of a process's children (all its threads'), from /proc."""
    found: list[str] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += (task / "children").read_text().split()
        except OSError:
            continue
    return found


def sched_s(pid: int) -> tuple[float, float]:
    """(the UI thread's seconds on a core, all threads' seconds waiting for one), from schedstat."""
    on_main = waited = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            on, wait, _ = (task / "schedstat").read_text().split()
        except (OSError, ValueError):
            continue
        waited += int(wait) / 1e9
        if task.name == str(pid):
            on_main = int(on) / 1e9
    return on_main, waited


def memory_mb(pid: int) -> tuple[float, float, float]:
    """(RSS, PSS, peak RSS) in MB, from /proc/PID/smaps_rollup and /proc/PID/status (VmHWM)."""
    values = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("Rss", "Pss"):
            values[name] = int(rest.split()[0]) / 1024
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name == "VmHWM":
            values[name] = int(rest.split()[0]) / 1024
    return values["Rss"], values["Pss"], values["VmHWM"]


def jobs_json(home: Path, runs: int = RUNS) -> dict[str, list[float]]:
    """Wall and CPU seconds (the child's user + system) of each `jobs --json`; the first one also
    apart: it starts without the index, as the first listing after an upgrade does."""
    script = shutil.which("gaudi-tui", path=str(Path(sys.executable).parent)) or "gaudi-tui"
    env = {**os.environ, "GAUDI_TUI_HOME": str(home)}
    walls, cpus = [], []
    for _ in range(runs + 1):
        before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        done = subprocess.run([script, "jobs", "--json"], env=env, capture_output=True, timeout=120)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if done.returncode != 0 or LONG_ID.encode() not in done.stdout:
            raise RuntimeError(f"jobs --json failed: {done.stderr.decode()[-500:]}")
    return {"cold": walls[:1], "cold cpu": cpus[:1], "wall": walls[1:], "cpu": cpus[1:]}


def jobs_cold(home: Path) -> dict[str, list[float]]:
    """RUNS first calls of `jobs --json`: the index is removed before each."""
    walls, cpus = [], []
    for _ in range(RUNS):
        (home / "state" / "jobs-index.json").unlink(missing_ok=True)
        shown = jobs_json(home, runs=0)
        walls += shown["cold"]
        cpus += shown["cold cpu"]
    return {"cold": walls, "cold cpu": cpus}


def jobs_part() -> int:
    """`--part jobs`: only the first `jobs --json` of each size, without the index."""
    print(f"history --part jobs: {SIZES} runs, the newest of {LONG_STEPS:,} metric lines; {load()}")
    compileall.compile_dir(ROOT / "gaudi_tui", quiet=1)
    with tempfile.TemporaryDirectory(prefix="gaudi-bench-history-") as tmp:
        own_home(path=Path(tmp) / "home")  # each size then has its own (never the user's runs folder)
        pool = Path(tmp) / "pool"
        for count in SIZES:
            make_runs(Path(tmp) / str(count) / "state" / "runs", count, LONG_STEPS, pool)
        for count in SIZES:
            shown = jobs_cold(Path(tmp) / str(count))
            print(
                f"  {count:>5} runs: jobs --json without the index {spread(shown['cold'])} s, "
                f"CPU {spread(shown['cold cpu'])} s (≤ 1), {RUNS} calls; {load()}",
                flush=True,
            )
    return 0


def started(tmux: Tmux) -> None:
    """Wait for the panel's first frame and its start-up children (the accelerator probe) to end."""
    tmux.wait("sort: index")  # the Devices screen's first frame
    time.sleep(2.0)  # the rest of start-up (the settings, the probe's start)
    deadline = time.perf_counter() + WAIT_S
    while children(tmux.pid):
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the panel's start-up children did not end in {WAIT_S:.0f} s")
        time.sleep(0.05)
    time.sleep(0.5)


def draw(tmux: Tmux, count: int) -> dict[str, float]:
    """Key 4 → the list drawn: wall, the panel's CPU, its UI thread's time on a core, the wait for one."""
    began, (on_main, waited) = cpu_s(tmux.pid), sched_s(tmux.pid)
    tmux.run("send-keys", "-t", "panel", "4")
    newest = [f"long pretrain · {LONG_ID[-4:]}", f"demo fine-tune {count - 2} · {copy_id(count - 2)[-4:]}"]
    drawn = tmux.wait(*newest)
    now_main, now_waited = sched_s(tmux.pid)
    return {
        "drawn": drawn,
        "drawn cpu": cpu_s(tmux.pid) - began,
        "ui on cpu": now_main - on_main,
        "waited": now_waited - waited,
    }


def panel(home: Path, count: int) -> dict[str, list[float]]:
    """DRAWS starts of the panel; the first one also waits for the charts (their first open, from the
    series the supervisor kept), idles and is measured; the second waits for the charts of the same
    run as an older version left it (no kept series, no saved one: every line read)."""
    shown: dict[str, list[float]] = {}
    for start in range(DRAWS):
        if start == 1:
            (home / "state" / "runs" / LONG_ID / "series.json").unlink()
            shutil.rmtree(home / "state" / "charts", ignore_errors=True)
        tmux = Tmux(home)
        try:
            started(tmux)
            began = cpu_s(tmux.pid)
            for name, value in draw(tmux, count).items():
                shown.setdefault(name, []).append(value)
            if start == 1:
                shown["old charts"] = [shown["drawn"][1] + tmux.wait(FINAL_LOSS)]
                shown["old charts cpu"] = [cpu_s(tmux.pid) - began]
            if start:
                continue
            shown["charts"] = [shown["drawn"][0] + tmux.wait(FINAL_LOSS)]
            shown["charts cpu"] = [cpu_s(tmux.pid) - began]
            time.sleep(2.0)  # the last redraw and the log pane settle
            idle = []
            for _ in range(WINDOWS):
                before, at = cpu_s(tmux.pid), time.perf_counter()
                time.sleep(WINDOW_S)
                idle.append((cpu_s(tmux.pid) - before) / (time.perf_counter() - at) * 100)
            rss, pss, peak = memory_mb(tmux.pid)
            shown.update(idle=idle, rss=[rss], pss=[pss], peak=[peak])
        finally:
            tmux.close()
    return shown


def old_charts(shown: dict[str, list[float]]) -> str:
    if "old charts" not in shown:
        return "as an older version left it: not measured (BENCH_DRAWS < 2)"
    return (f"as an older version left it (no kept series): {shown['old charts'][0]:.2f} s, "
            f"{shown['old charts cpu'][0]:.2f} s CPU")  # fmt: skip


def main() -> int:
    began = time.monotonic()
    print(f"history: {SIZES} runs, the newest of {LONG_STEPS:,} metric lines; {load()}")
    compileall.compile_dir(ROOT / "gaudi_tui", quiet=1)
    with tempfile.TemporaryDirectory(prefix="gaudi-bench-history-") as tmp:
        pool = Path(tmp) / "pool"
        start = time.perf_counter()
        kept_cpu = [
            make_runs(Path(tmp) / str(count) / "state" / "runs", count, LONG_STEPS, pool) for count in SIZES
        ]
        print(
            f"  generated in {time.perf_counter() - start:.1f} s; the long run's series, kept as its supervisor "
            f"keeps it while the job runs: {kept_cpu[0]:.1f} s of the supervisor's CPU over the run"
        )
        rows = []
        for count in SIZES:
            home = Path(tmp) / str(count)
            json_s = jobs_json(home)
            shown = panel(home, count)
            rows.append((count, json_s, shown))
            print(
                f"  {count:>5} runs: key 4 → list drawn {spread(shown['drawn'])} s (≤ 0.5), {len(shown['drawn'])} starts\n"
                f"         the panel's CPU {spread(shown['drawn cpu'])} s, its UI thread on a core "
                f"{spread(shown['ui on cpu'])} s, its threads waited for a core {spread(shown['waited'])} s\n"
                f"         charts of the long run, first open, drawn {shown['charts'][0]:.2f} s (≤ 1), "
                f"{shown['charts cpu'][0]:.2f} s CPU; {old_charts(shown)}\n"
                f"         idle on Training {spread(shown['idle'])} % of a core (≤ 1) · "
                f"RSS {shown['rss'][0]:.0f} MB, PSS {shown['pss'][0]:.0f} MB (≤ 100), peak RSS {shown['peak'][0]:.0f} MB\n"
                f"         jobs --json {spread(json_s['wall'])} s, CPU {spread(json_s['cpu'])} s (≤ 1); "
                f"the first, without the index: {json_s['cold'][0]:.2f} s, CPU {json_s['cold cpu'][0]:.2f} s\n"
                f"         {load()}",
                flush=True,
            )
    (small, s_json, _), (large, l_json, _) = rows[0], rows[-1]
    growth = statistics.median(l_json["cpu"]) / statistics.median(s_json["cpu"])
    print(f"  jobs --json CPU grows ×{growth:.2f} from {small} to {large} runs")
    print(f"history took {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(jobs_part() if sys.argv[1:] == ["--part", "jobs"] else main())
    except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
        print(f"history: could not measure: {exc}")
        sys.exit(1)
