"""Runs side by side and the export over a run of 1,000,000 metric lines (issue 30, item 1).

Two run folders in a GAUDI_TUI_HOME of their own (GAUDI_TUI_RUNS_DIR unset: nothing of the user's
is read or written): a copy of the real finished run of tests/jobs/data/runs/ and a generated long
run (bench/common/history.py: one `log` line a step). Each command is the console entry
(`python -m gaudi_tui`) in a process of its own, RUNS times:

- `jobs compare A B --json`, cold and warm apart: a cold call finds no saved series (the state
  folder's `charts/` removed first) and reads each metrics.jsonl whole; a warm call starts from the
  series the call before saved. Wall time and peak RSS of each;
- `jobs export A B --csv FILE` and `--parquet FILE`: wall time, peak RSS and the file's size (the
  table is kept in typed columns, 8 bytes a cell, then written by pandas; no cache).

Every call's output (compare's stdout, the exported file's bytes) must be the same as the first
call's: a warm read that answered differently from a cold one is a failure, not a faster figure.
Peak RSS is the child's own `ru_maxrss` (os.wait4). Figures: median (min, max), with the load
average. Exit 1 when it could not measure or the outputs disagree. BENCH_LONG_STEPS changes the
long run's length.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
from common.figures import load, spread  # noqa: E402
from common.history import LONG_ID, RECORDED, write_long_run  # noqa: E402

LONG_STEPS = int(os.environ.get("BENCH_LONG_STEPS", "1000000"))
RUNS = 3


def measure(args: list[str], home: Path, written: Path | None) -> tuple[float, float, bytes]:
    """(wall seconds, peak RSS MiB, output) of one `python -m gaudi_tui ARGS` to its exit; the
    output is its stdout, or the bytes of the file it wrote."""
    env = {k: v for k, v in os.environ.items() if k != "GAUDI_TUI_RUNS_DIR"}
    env |= {"GAUDI_TUI_HOME": str(home), "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryFile() as out:
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "gaudi_tui", *args], env=env, stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(args)} exited {proc.returncode}")
        out.seek(0)
        output = written.read_bytes() if written is not None else out.read()
    return wall, usage.ru_maxrss / 1024, output


class Case:
    """One command's calls: their figures, and whether every output was the first one's."""

    def __init__(self, name: str) -> None:
        self.name, self.first = name, b""
        self.walls: list[float] = []
        self.peaks: list[float] = []

    def add(self, wall: float, peak: float, output: bytes) -> None:
        if not self.walls:
            self.first = output
        elif output != self.first:
            raise SystemExit(f"{self.name}: call {len(self.walls) + 1} answered differently from the first")
        self.walls.append(wall)
        self.peaks.append(peak)

    def line(self, extra: str = "") -> str:
        return f"{self.name}: wall {spread(self.walls)} s, peak RSS {spread(self.peaks, '{:.0f}')} MiB{extra}"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="gaudi-tui-bench-compare-") as tmp:
        home = Path(tmp) / "home"
        runs = home / "state" / "runs"
        runs.mkdir(parents=True, mode=0o700)
        shutil.copytree(RECORDED, runs / RECORDED.name)
        write_long_run(runs / LONG_ID, LONG_STEPS)
        size = (runs / LONG_ID / "metrics.jsonl").stat().st_size
        print(f"long run: {LONG_STEPS:,} steps, metrics.jsonl {size / 2**20:.0f} MiB; {load()}")
        ids = [RECORDED.name, LONG_ID]
        compare_args = ["jobs", "compare", *ids, "--json"]
        cold, warm = Case("jobs compare --json, cold"), Case("jobs compare --json, warm")
        for _ in range(RUNS):
            shutil.rmtree(home / "state" / "charts", ignore_errors=True)
            cold.add(*measure(compare_args, home, None))
            warm.add(*measure(compare_args, home, None))
        if warm.first != cold.first:
            raise SystemExit("jobs compare: the warm call answered differently from the cold one")
        print(cold.line())
        print(warm.line())
        csv, parquet = Path(tmp) / "runs.csv", Path(tmp) / "runs.parquet"
        for name, written in (("csv", csv), ("parquet", parquet)):
            case = Case(f"jobs export --{name}")
            for _ in range(RUNS):
                case.add(*measure(["jobs", "export", *ids, f"--{name}", str(written)], home, written))
            print(case.line(f", file {written.stat().st_size / 2**20:.0f} MiB"))
        print(load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
