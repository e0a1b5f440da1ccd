"""What a Slurm job's state means to the panel: when a signal can reach the ranks, and a job that
only a stale accounting record calls active (the controller, which holds every live job, no
longer knows it): unknown, for a bounded time, never a job that runs on."""

from __future__ import annotations

from gaudi_tui.core.jobs.targets import seconds_from_env
from gaudi_tui.core.slurm import model
from gaudi_tui.core.slurm.cli import Slurm

PENDING = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED"})
SIGNALLED = frozenset({"RUNNING"})
"""The states in which a signal reaches the ranks. In any other (pending, configuring, requeued,
suspended, completing) `scancel --signal` cannot work (22.05 blocks ~95 s on a job without
running steps): stop and kill go straight to a plain scancel."""
STALE = "STALE"
"""What `Follow.fallback` says when the controller no longer knows the job, but Slurm's accounting
still holds it as active: a stale record (the job's end never reached slurmdbd)."""
LEFT = "LEFT"
"""What `watch` says when the supervisor leaves the job with its end unknown."""
STALE_ENV = "GAUDI_TUI_SLURM_STALE_S"
DEFAULT_STALE_S = 120.0


def stale_limit() -> float:
    """How long the supervisor waits on a job only a stale accounting record says is active before
    it leaves it as unknown: 2 min, or $GAUDI_TUI_SLURM_STALE_S."""
    return seconds_from_env(STALE_ENV, DEFAULT_STALE_S)


def accounting_state(slurm: Slurm, job_id: int) -> str | None:
    """The job's state in Slurm's accounting (sacct), None where the cluster keeps none or it
    does not list the job. Raises SlurmError as `Slurm.sacct` does."""
    for acct in model.parse_sacct(slurm.sacct([job_id]) or ""):
        if acct.job_id == str(job_id):
            return acct.state
    return None


def stale_words(job_id: int | None, waiting: bool) -> str:
    """The supervisor's note on a job only stale accounting calls active: while it waits, or why it
    leaves the job (the attempt's error)."""
    said = (
        f"Slurm's controller no longer knows job {job_id}, but its accounting (sacct) still says it is active"
    )
    if waiting:
        return f"{said}: a stale record? waiting up to {stale_limit():g} s"
    return f"{said} after {stale_limit():g} s (a stale record): its end is unknown. k records it as ended"
