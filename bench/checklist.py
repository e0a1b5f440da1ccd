"""Checklist: wall time of the full checklist, checks run concurrently vs. the same checks one at a time.

Both measured here, in this process, the way the Checklist screen runs them (core/doctor/runner.py):
1. this host as it is (on a CPU machine: no Gaudi, so the child probes fail fast);
2. a replayed Gaudi 2 host (tests/doctor/hosts.py) whose child probes import the fake
   habana_frameworks, and with it torch, as they would on a real Gaudi host.
Median of N runs each. Target: this host < 3 s.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST_RUNS = 5
GAUDI_RUNS = 3


def median_seconds(make_ctx: Callable[[], object], runs: int, max_parallel: int | None) -> float:
    from gaudi_tui.core.doctor.checks import ALL_CHECKS
    from gaudi_tui.core.doctor.runner import run_checks

    times = []
    for _ in range(runs):
        start = time.perf_counter()
        results = run_checks(ALL_CHECKS, make_ctx(), max_parallel=max_parallel)
        times.append(time.perf_counter() - start)
        assert len(results) == len(ALL_CHECKS)
    return statistics.median(times)


def report(label: str, make_ctx: Callable[[], object], runs: int, target: float | None = None) -> None:
    median_seconds(make_ctx, 1, None)  # warm the file cache
    parallel = median_seconds(make_ctx, runs, None)
    sequential = median_seconds(make_ctx, runs, 1)
    goal = f" (target < {target:g} s)" if target else ""
    print(f"{label}: concurrent {parallel:.2f} s{goal}, one at a time {sequential:.2f} s")
    print(f"  ratio {parallel / sequential:.2f} (concurrent / one at a time), median of {runs}")


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from gaudi_tui.core.doctor.context import CheckContext
    from tests.doctor.hosts import demo_gaudi_host

    report("full checklist, this host", CheckContext.for_this_host, HOST_RUNS, target=3.0)
    gaudi = demo_gaudi_host(Path(tempfile.mkdtemp(prefix="gaudi-tui-bench-site-")))
    report("full checklist, replayed Gaudi 2 host", lambda: gaudi(threading.Event()), GAUDI_RUNS)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("GAUDI_TUI_HOME", tempfile.mkdtemp(prefix="gaudi-tui-bench-"))
    sys.exit(main())
