"""Places a job runs: one module per target, picked by the spec's `target` field.

A target runs one attempt of a job from the supervisor process: it starts (or re-attaches to) the
job, keeps the run folder up to date (status.json through `Attempt.save`, metrics.jsonl,
stdout.log) and records the outcome. It never imports the UI or the supervisor. `local` runs the
launcher on this host; `ray` submits to a Ray cluster. Slurm or Kubernetes would be one more module
with the same `supervise`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus


@dataclass
class Attempt:
    """One attempt of a job, as the supervisor hands it to a target."""

    run: RunFolder
    spec: JobSpec
    resume: Path | None
    """Checkpoint to continue from (local), or any value meaning 'the newest complete one' (Ray)."""
    attach: bool
    """Re-attach to an attempt already running (a new supervisor after the old one died)."""
    kill_requested: threading.Event
    save: Callable[..., None]
    """Update status.json: `save(state="running", ...)`."""
    status: Callable[[], JobStatus]


class Target(Protocol):
    def supervise(self, attempt: Attempt) -> int:
        """Run the attempt to its end, record the outcome in status.json; the supervisor's exit code."""
        ...


def for_spec(spec: JobSpec) -> Target:
    if spec.target == "ray":
        from gaudi_tui.core.jobs.targets.ray import RayTarget

        return RayTarget()
    if spec.kind == "command":
        from gaudi_tui.core.jobs.kinds.command_supervise import CommandSupervision

        return CommandSupervision()
    from gaudi_tui.core.jobs.targets.local import LocalTarget

    return LocalTarget()
