"""Runs side by side and the export over a run of 1,000,000 metric lines (issue 30, item 1).

Two run folders in a GAUDI_TUI_HOME of their own: a copy of the real finished run of
tests/jobs/data/runs/ and a generated long run (bench/common/history.py: one `log` line a step).
Each command is the console entry (`python -m gaudi_tui`) in a process of its own, RUNS times:

- `jobs compare A B --json`: wall time and peak RSS (each metrics.jsonl read once into bounded lines);
- `jobs export A B --csv FILE` and `--parquet FILE`: wall time, peak RSS and the file's size (the
  table is kept in typed columns, 8 bytes a cell, then written by pandas).

Peak RSS is the child's own `ru_maxrss` (os.wait4). Figures: median (min, max), with the load
average. Exit 1 only when it could not measure. BENCH_LONG_STEPS changes the long run's length.
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


def measure(args: list[str], home: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one `python -m gaudi_tui ARGS` to its exit."""
    env = {**os.environ, "GAUDI_TUI_HOME": str(home), "PYTHONPATH": str(ROOT)}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "gaudi_tui", *args], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {proc.returncode}")
    return wall, usage.ru_maxrss / 1024


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
        csv, parquet = Path(tmp) / "runs.csv", Path(tmp) / "runs.parquet"
        cases: dict[str, tuple[list[str], Path | None]] = {
            "jobs compare --json": (["jobs", "compare", *ids, "--json"], None),
            "jobs export --csv": (["jobs", "export", *ids, "--csv", str(csv)], csv),
            "jobs export --parquet": (["jobs", "export", *ids, "--parquet", str(parquet)], parquet),
        }
        for name, (args, written) in cases.items():
            walls, peaks = [], []
            for _ in range(RUNS):
                wall, peak = measure(args, home)
                walls.append(wall)
                peaks.append(peak)
            extra = f", file {written.stat().st_size / 2**20:.0f} MiB" if written is not None else ""
            print(f"{name}: wall {spread(walls)} s, peak RSS {spread(peaks, '{:.0f}')} MiB{extra}")
        print(load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
