"""Whether an active job is lost, judged from a status read again: the one call every reader makes.

A supervisor writes its last status and then exits. A reader that read `status.json` before that
write and looks at the supervisor after the exit sees an active state and a dead supervisor: a job
that succeeded would be called lost (`gaudi-tui run --follow` of a fast job did, 3 runs in 4). So a
reader that finds an active status with its supervisor gone reads `status.json` once more, after the
supervisor was found gone, and judges from that: the last write happened before the exit.
"""

from __future__ import annotations

from pathlib import Path

from gaudi_tui.core.jobs import status as status_mod
from gaudi_tui.core.jobs.status import ACTIVE, JobStatus, State, effective_state


def current(path: Path, status: JobStatus, now: float) -> tuple[JobStatus, State]:
    """The status to judge by and its state: `status` itself unless it is active with its supervisor
    gone; then `path` (that job's status.json) read again, which may say how the job ended."""
    state = effective_state(status, now)
    if state != "lost" or status.state not in ACTIVE:
        return status, state
    again = status_mod.read(path)
    if again is None:
        return status, state
    return again, effective_state(again, now)
