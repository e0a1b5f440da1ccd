"""Asking a job for a profile: the one call `gaudi-tui jobs profile` and the Training screen's `P`
make. It refuses, with the reason, a job that is not running, a kind with no training steps (a
model server), and a second request while one is pending or being taken (`insight.profile`)."""

from __future__ import annotations

import time

from gaudi_tui.core.insight.profile import pending, request
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import SpecError
from gaudi_tui.core.jobs.status import ACTIVE, effective_state

CANNOT = frozenset({"serve"})
"""Kinds whose job has no training steps for the profiler to record."""


def refusal(run: RunFolder) -> str | None:
    """Why this run's job cannot be asked for a profile now, else None (it writes nothing)."""
    status = run.status()
    if status is None or effective_state(status, time.time()) not in ACTIVE:
        return "the job is not running"
    try:
        kind = run.row_spec().kind
    except SpecError as exc:
        return f"its spec cannot be read: {exc}"
    if kind in CANNOT:
        return (
            f"a {kind} job has no training steps to record: profiles are taken from the built-in "
            "Trainer job and Trainer command jobs"
        )
    return pending(run.path)


def ask(run: RunFolder, steps: int) -> str | None:
    """Ask the run's job for a profile of `steps` steps; None when asked, else why not."""
    return refusal(run) or request(run.path, steps)
