"""Launch, kill and resume for jobs on a Ray cluster (`control` hands Ray jobs to these).

Kept apart from `control` so that the local rules there (locks, live-process checks) and the
cluster's rules here change independently. The cluster side lives in `targets/ray.py`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from gaudi_tui.core.jobs import runfolder, supervisor
from gaudi_tui.core.jobs.monitor import MetricsReader
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import ACTIVE, effective_state
from gaudi_tui.core.jobs.targets import ray as ray_target
from gaudi_tui.core.jobs.validate import InvalidSpec, numbers, sources

LIVE = ("PENDING", "RUNNING")


class RayControlError(RuntimeError):
    pass


def submit(spec: JobSpec, env: Mapping[str, str] | None = None) -> RunFolder:
    """Check the spec against the live cluster, create the run folder, start the supervisor."""
    prepared, problems = ray_target.check(spec)
    problems = [*numbers(prepared), *problems, *sources(prepared)]
    if problems:
        raise InvalidSpec(problems)
    run = runfolder.create(prepared, accelerator=f"ray:{prepared.device}")
    supervisor.start(run, env=env)
    return run


def kill(run: RunFolder) -> None:
    """`k` when the supervisor is gone: stop the job on the cluster and verify it ended."""
    try:
        ray_target.kill_orphan(run)
    except ray_target.ClusterError as exc:
        raise RayControlError(str(exc)) from None


def resume(run: RunFolder, env: Mapping[str, str] | None = None) -> str:
    """Re-attach when the cluster still runs the job; else start a new attempt from the newest
    complete checkpoint (known from the mirrored `save` events). Returns what was done."""
    status = run.status()
    if status is None:
        raise RayControlError(f"{run.id} has no readable status.json")
    state = effective_state(status, time.time())
    if state in ACTIVE:
        raise RayControlError(f"{run.id} is still {state}: stop it first")
    if state == "lost" and ray_target.job_state(run) in LIVE:
        supervisor.start(run, env=env, attach=True)
        return "re-attached to the running Ray job"
    if state == "succeeded":
        raise RayControlError(f"{run.id} already finished; its weights are in {run.model_dir}")
    metrics = MetricsReader(run.metrics_path)
    metrics.poll()
    if metrics.last_checkpoint is None:
        raise RayControlError(
            f"{run.id} has no complete checkpoint to resume from (stop a running job with s to save one)"
        )
    supervisor.requeue(run, status, Path(metrics.last_checkpoint), env)
    return f"resuming on the cluster from {Path(metrics.last_checkpoint).name}"
