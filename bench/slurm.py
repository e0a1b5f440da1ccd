"""Slurm: the real squeue call (the poll's text form and `squeue --json`), and the same 2-process
demo fine-tune on a 2-node Slurm cluster (this machine, loopback) vs local `torchrun`, in one run.

1. The squeue call. One refresh of the Slurm screen makes one squeue call; it is timed on the test
   cluster holding `--held` held jobs, in the poll's text form and as `squeue --json` read job by
   job (the poll before), after one untimed call of each, in six turns whose order alternates
   (text first, then JSON first): wall, the squeue child's CPU, this process's CPU (answers
   that barely change: held jobs). The panel's CPU to read a 1,000-job answer that changes at every poll is `bench/slurm_queue.py`'s (the path the
   poll takes, against a whole-document decode).
2. Jobs. Steady-state steps/s (1 / the median seconds per step of the log windows after step 20,
   from metrics.jsonl's timestamps) and submit → first step (from `control.submit` to the wall
   time of the first `log` event; for Slurm that includes sbatch, the scheduler's pass and srun).
   One untimed warm-up run of each, then RUNS pairs whose order alternates (local first, then
   Slurm first); medians with min/max. Target: steps/s ratio Slurm/local ≥ 0.95.

Where it cannot measure (no Slurm, not root) it says why and exits 1, so `make bench` lists it.

The cluster is the tests' (tests/slurm/cluster.py): munge, slurmctld and two slurmd on free ports;
the Slurm job runs one rank on each node (`slurm_nodes=2`, `slurm_cards_per_node=1`).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
from common.figures import load, spread  # noqa: E402
from common.home import own_home  # noqa: E402
from common.job_runs import STEPS, WARMUP_STEPS, alternating, spec  # noqa: E402

RUNS = 4


def real_squeue(cluster, held: int) -> dict[str, tuple[list[float], list[float], list[float], int]]:  # noqa: ANN001
    """Real calls with `held` held jobs queued, the poll's text form (`queue_fields.read`) and
    `squeue --json` read job by job (`queue_text`, the poll before), alternating: wall, squeue's
    own CPU and this process's CPU (reading the pipe and the jobs) in seconds, and the jobs seen."""
    from gaudi_tui.core.slurm import queue_fields
    from gaudi_tui.core.slurm.cli import Slurm
    from gaudi_tui.core.slurm.queue_text import jobs_from_text

    for _ in range(held):
        cluster.run("sbatch", "-H", "-J", "held", "--wrap", "true")
    slurm = Slurm(env=cluster.env)
    forms = {
        "text form": lambda: queue_fields.read(slurm)[1],
        "json by job": lambda: jobs_from_text(slurm.squeue_text()),
    }
    out: dict[str, tuple[list[float], list[float], list[float], int]] = {n: ([], [], [], 0) for n in forms}
    for call in forms.values():  # one untimed call each: squeue's first answer, the imports
        call()
    for turn in range(6):
        order = list(forms.items()) if turn % 2 == 0 else list(reversed(forms.items()))
        for name, call in order:  # text form first in even turns, JSON first in odd ones
            walls, cpus, own, _ = out[name]
            before, cpu = resource.getrusage(resource.RUSAGE_CHILDREN), time.process_time()
            start = time.perf_counter()
            jobs = len(call())
            walls.append(time.perf_counter() - start)
            own.append(time.process_time() - cpu)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            out[name] = (walls, cpus, own, jobs)
    cluster.cancel_all()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--held", type=int, default=200, help="held jobs queued for the real squeue call")
    parser.add_argument("--squeue-only", action="store_true", help="only the squeue call (no training runs)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    own_home("gaudi-tui-bench-slurm-")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(load())

    from tests.slurm.cluster import missing_binaries, running_cluster

    if missing_binaries() or os.geteuid() != 0:
        print(
            "could not measure: Slurm is not installed here or this is not root (no cluster, no job runs)",
            file=sys.stderr,
        )
        return 1
    local: list[tuple[float, float]] = []
    on_slurm: list[tuple[float, float]] = []
    try:
        with running_cluster() as cluster:
            os.environ["SLURM_CONF"] = str(cluster.conf)
            for name, (walls, cpus, own, seen) in real_squeue(cluster, args.held).items():
                print(f"real squeue, {name}, {seen} jobs: {spread([w * 1000 for w in walls], '{:.0f}')} ms wall, "
                      f"squeue's own CPU {spread([c * 1000 for c in cpus], '{:.0f}')} ms, the panel's "
                      f"{spread([c * 1000 for c in own], '{:.0f}')} ms (one call a refresh)")  # fmt: skip
            if args.squeue_only:
                return 0
            local, on_slurm = alternating(
                spec(name="local torchrun", launcher="torchrun"),
                spec(name="slurm", target="slurm", slurm_nodes=2, slurm_cards_per_node=1),
                args.runs,
            )
            cluster.cancel_all()
    finally:
        shutil.rmtree(os.environ["GAUDI_TUI_HOME"], ignore_errors=True)
    local_rate, slurm_rate = [r for r, _ in local], [r for r, _ in on_slurm]
    local_start, slurm_start = [s for _, s in local], [s for _, s in on_slurm]
    print(
        f"demo fine-tune, 2 processes on CPU (gloo), {STEPS} steps (steady from {WARMUP_STEPS}), batch 8, seq ≤ 64; warm-up + {args.runs} runs each, order alternating"
    )
    print(f"  local torchrun   : {spread(local_rate)} steps/s, submit→first step {spread(local_start)} s")
    print(f"  Slurm (2 nodes)  : {spread(slurm_rate)} steps/s, submit→first step {spread(slurm_start)} s")
    ratios = [r / max(lr, 1e-9) for r, lr in zip(slurm_rate, local_rate, strict=True)]
    print(f"steps/s ratio Slurm/local {statistics.median(slurm_rate) / statistics.median(local_rate):.3f} "
          f"(per pair {spread(ratios, '{:.3f}')}; target ≥ 0.95)")  # fmt: skip
    print(
        f"first-step latency Slurm − local {statistics.median(slurm_start) - statistics.median(local_start):+.1f} s"
    )
    print(f"at the end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
