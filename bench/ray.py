"""Ray: the same 2-process demo fine-tune on a 2-node Ray cluster (this machine, loopback) vs local
`torchrun`, in one run. Figures per run: steady-state steps/s (1 / the median seconds per step of the
log windows after step 20, from metrics.jsonl's timestamps) and submit-to-first-step latency (from
`control.submit` to the wall time of the first `log` event in metrics.jsonl — for Ray that includes
the Jobs API, Ray Train's worker group and the log-stream mirror). Runs alternate; medians with
min/max. One untimed warm-up run of each, then RUNS pairs whose order alternates (local first,
then Ray first). Target: steps/s ratio Ray/local ≥ 0.9.

The cluster is the tests' (tests/ray/cluster.py): two `ray start` nodes of 1 CPU each, started here
and stopped after; the Ray job puts one worker on each.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
from common.figures import load, spread  # noqa: E402
from common.home import own_home  # noqa: E402
from common.job_runs import STEPS, WARMUP_STEPS, alternating, spec  # noqa: E402

RUNS = 4


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    runs = parser.parse_args().runs
    # This file is named ray.py: drop its folder from the path so `import ray` finds Ray.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    try:
        import ray  # noqa: F401
    except ImportError:
        print("ray is not installed: pip install 'gaudi-tui[cluster]'", file=sys.stderr)
        return 1
    sys.path.insert(0, str(ROOT))
    own_home("gaudi-tui-bench-ray-")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from tests.ray.cluster import RayTestCluster, free_port

    root = Path(tempfile.mkdtemp(prefix="gtbench-", dir="/tmp"))
    cluster = RayTestCluster(root, free_port(), free_port())
    local: list[tuple[float, float]] = []
    on_ray: list[tuple[float, float]] = []
    try:
        cluster.start_node(
            "head", "--head", f"--port={cluster.gcs_port}", "--dashboard-host=127.0.0.1",
            f"--dashboard-port={cluster.dashboard_port}", "--include-dashboard=true",
            f"--ray-client-server-port={free_port()}",
        )  # fmt: skip
        cluster.start_node("worker", f"--address=127.0.0.1:{cluster.gcs_port}")
        cluster.wait_nodes(2)
        local, on_ray = alternating(
            spec(name="local torchrun", launcher="torchrun"),
            spec(name="ray", target="ray", ray_address=cluster.address, workers=2),
            runs,
        )
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(os.environ["GAUDI_TUI_HOME"], ignore_errors=True)
    local_rate, ray_rate = [r for r, _ in local], [r for r, _ in on_ray]
    local_start, ray_start = [s for _, s in local], [s for _, s in on_ray]
    print(
        f"demo fine-tune, 2 processes on CPU (gloo), {STEPS} steps (steady from {WARMUP_STEPS}), batch 8, seq ≤ 64; warm-up + {runs} runs each, order alternating; {load()}"
    )
    print(f"  local torchrun : {spread(local_rate)} steps/s, submit→first step {spread(local_start)} s")
    print(f"  Ray (2 nodes)  : {spread(ray_rate)} steps/s, submit→first step {spread(ray_start)} s")
    ratios = [r / max(lr, 1e-9) for r, lr in zip(ray_rate, local_rate, strict=True)]
    print(f"steps/s ratio Ray/local {statistics.median(ray_rate) / statistics.median(local_rate):.3f} "
          f"(per pair {spread(ratios, '{:.3f}')}; target ≥ 0.9)")  # fmt: skip
    print(
        f"first-step latency Ray − local {statistics.median(ray_start) - statistics.median(local_start):+.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
