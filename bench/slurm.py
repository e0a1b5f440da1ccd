"""Slurm: the panel's queue poll with 1,000 jobs, and the same 2-process demo fine-tune on a 2-node
Slurm cluster (this machine, loopback) vs local `torchrun`, in one run.

1. Poll cost. One refresh of the Slurm screen = one `squeue --json` + one `sinfo --json`, parsed
   into jobs and nodes. The CPU part replays a GENERATED 1,000-job `squeue --json` (the 9 real
   22.05.8 job records of tests/data/slurm/squeue_all.json, copied with new ids) through the same
   parser the panel uses; the figure is the panel's CPU seconds per refresh ÷ the 2 s refresh
   (target ≤ 2 %). The real `squeue --json` call is also timed on the test cluster holding
   `--held` held jobs (its own CPU is the squeue child's, printed apart).
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
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
from common.figures import load, spread  # noqa: E402
from common.job_runs import STEPS, WARMUP_STEPS, alternating, spec  # noqa: E402

DATA = ROOT / "tests" / "data" / "slurm"
RUNS = 4
REFRESH_S = 2.0


def generated_queue(count: int) -> str:
    real = json.loads((DATA / "squeue_all.json").read_text())
    jobs = []
    for i in range(count):
        row = dict(real["jobs"][i % len(real["jobs"])])
        row["job_id"] = 1000 + i
        jobs.append(row)
    return json.dumps({**real, "jobs": jobs})


def poll_cost(count: int, refreshes: int = 20) -> list[float]:
    """CPU seconds of this process per refresh (parse a `count`-job queue and the recorded nodes)."""
    from gaudi_tui.core.slurm import model, table

    queue_text = generated_queue(count)
    nodes_text = (DATA / "sinfo.json").read_text()
    costs = []
    for _ in range(refreshes):
        start = time.process_time()
        jobs = model.jobs_from_json(json.loads(queue_text))
        nodes = model.nodes_from_json(json.loads(nodes_text))
        mine = table.mine(jobs, "root")
        rows = [table.queue_row(j) for j in mine[:60]]  # what one screen of rows draws
        rows += [table.node_row(n) for n in nodes]
        costs.append(time.process_time() - start)
    return costs


def real_squeue(cluster, held: int) -> tuple[list[float], list[float], int]:  # noqa: ANN001
    """Wall and child-CPU seconds of real `squeue --json` calls with `held` held jobs queued."""
    from gaudi_tui.core.slurm.cli import Slurm

    for _ in range(held):
        cluster.run("sbatch", "-H", "-J", "held", "--wrap", "true")
    slurm = Slurm(env=cluster.env)
    walls, cpus, jobs = [], [], 0
    for _ in range(5):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        jobs = len(slurm.squeue()["jobs"])
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    cluster.cancel_all()
    return walls, cpus, jobs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--jobs", type=int, default=1000, help="jobs in the generated queue")
    parser.add_argument("--held", type=int, default=200, help="held jobs queued for the real squeue call")
    parser.add_argument("--poll-only", action="store_true", help="only the poll cost (no training runs)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ["GAUDI_TUI_HOME"] = tempfile.mkdtemp(prefix="gaudi-tui-bench-slurm-")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    costs = poll_cost(args.jobs)
    share = [c / REFRESH_S * 100 for c in costs]
    print(load())
    print(f"poll: {args.jobs} jobs (generated from real 22.05 records) + 2 nodes, parsed per refresh:")
    print(f"  panel CPU {spread([c * 1000 for c in costs], '{:.1f}')} ms a refresh = "
          f"{spread(share, '{:.2f}')} % at a {REFRESH_S:g} s refresh (target ≤ 2 %)")  # fmt: skip

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
            walls, cpus, seen = real_squeue(cluster, args.held)
            print(f"  real squeue --json with {seen} jobs: {spread([w * 1000 for w in walls], '{:.0f}')} ms wall, "
                  f"squeue's own CPU {spread([c * 1000 for c in cpus], '{:.0f}')} ms (one call a refresh)")  # fmt: skip
            if args.poll_only:
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
