"""Checklist: wall time of the full checklist, checks run concurrently vs. the same checks one at a time.

Both measured here, in this process, the way the Checklist screen runs them (core/doctor/runner.py):
1. this host as it is (on a CPU machine: no Gaudi, so the child probes fail fast);
2. a replayed Gaudi 2 host (tests/doctor/hosts.py) whose child probes import the fake
   habana_frameworks, and with it torch, as they would on a real Gaudi host.
Medians of N runs each with min–max, and the load average. Target: this host < 3 s.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
from common.figures import load, spread  # noqa: E402
from common.home import own_home  # noqa: E402

HOST_RUNS = 5
GAUDI_RUNS = 2


def one_run(make_ctx: Callable[[], object], max_parallel: int | None) -> float:
    from gaudi_tui.core.doctor.checks import ALL_CHECKS
    from gaudi_tui.core.doctor.runner import run_checks

    start = time.perf_counter()
    results = run_checks(ALL_CHECKS, make_ctx(), max_parallel=max_parallel)
    elapsed = time.perf_counter() - start
    if len(results) != len(ALL_CHECKS):
        raise RuntimeError(f"{len(results)} results for {len(ALL_CHECKS)} checks")
    return elapsed


def report(label: str, make_ctx: Callable[[], object], runs: int, target: float | None = None) -> None:
    """`runs` pairs, concurrent and one at a time interleaved (the order swapped every pair)."""
    one_run(make_ctx, None)  # warm the file cache
    times: dict[int | None, list[float]] = {None: [], 1: []}
    for i in range(runs):
        for max_parallel in (None, 1) if i % 2 == 0 else (1, None):
            times[max_parallel].append(one_run(make_ctx, max_parallel))
    parallel, sequential = times[None], times[1]
    goal = f" (target < {target:g} s)" if target else ""
    print(f"{label}, median of {runs} interleaved pairs ({load()}):")
    print(f"  concurrent {spread(parallel)} s{goal}, one at a time {spread(sequential)} s")
    ratios = [p / q for p, q in zip(parallel, sequential, strict=True)]
    print(f"  ratio concurrent / one at a time {spread(ratios)}")


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from gaudi_tui.core.doctor.context import CheckContext
    from tests.doctor.hosts import demo_gaudi_host

    try:
        report("full checklist, this host", CheckContext.for_this_host, HOST_RUNS, target=3.0)
        gaudi = demo_gaudi_host(Path(tempfile.mkdtemp(prefix="gaudi-tui-bench-site-")))
        report("full checklist, replayed Gaudi 2 host", lambda: gaudi(threading.Event()), GAUDI_RUNS)
    except RuntimeError as error:
        print(f"bench/checklist.py: could not measure: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    own_home()
    sys.exit(main())
