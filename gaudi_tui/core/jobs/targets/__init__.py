"""Places a job runs: one module per target, named by the spec's `target` field.

Every target implements one small protocol, `Target`; `core/jobs/control.py` makes every
submit/stop/kill/resume/re-attach decision once, through it, and names no target. A target:

- `check`: prepares the spec for where it runs (device, cards, workers resolved) and lists its
  own problems; the shared validation (`validate.shared`: numbers, hardware rules, sources,
  environment) runs on the prepared spec for every target;
- `supervise`: in the detached supervisor, runs one attempt (or re-attaches to it,
  `attempt.attach`), keeps status.json (through `Attempt.save`), metrics.jsonl and stdout.log up
  to date and records the outcome;
- `request_stop`: a graceful stop (every rank stops at one step, one checkpoint);
- `kill`: ends the attempt when no supervisor is alive to do it; bounded; says what was done;
- `presence`: may an attempt of the run still be running anywhere? `running`, `ended` or
  `unknown`, bounded in time. Unknown is never ended: control refuses to start another attempt.

`local` runs the launcher on this host; `ray` submits to a Ray cluster. Another place (Slurm,
Kubernetes) is one more module registered in `TARGETS`, not a branch in control.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus

if TYPE_CHECKING:
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.jobs.validate import Problem

TARGETS: dict[str, str] = {
    "local": "gaudi_tui.core.jobs.targets.local",
    "ray": "gaudi_tui.core.jobs.targets.ray",
    "slurm": "gaudi_tui.core.jobs.targets.slurm",
}
"""Target name → module; each module has `TARGET`, an object implementing `Target`."""

Where = Literal["running", "ended", "unknown"]


def seconds_from_env(name: str, default: float) -> float:
    """A target's time bound: $`name` in seconds where it is a positive number, else `default`."""
    try:
        value = float(os.environ.get(name, "") or default)
    except ValueError:
        return default
    return value if value > 0 else default


class TargetError(RuntimeError):
    """The target cannot do this now (cluster unreachable, refused); the message says why and what
    to do."""


@dataclass(frozen=True)
class Presence:
    """May an attempt of this run still be running anywhere?"""

    where: Where
    reason: str
    """Words for the user: "Ray job … is RUNNING", "the dashboard did not answer in 10 s"."""
    attach: bool = False
    """A new supervisor can follow this attempt: to its end while it runs, or to mirror an end
    that no supervisor saw (a lost Ray job that finished on the cluster)."""


@dataclass(frozen=True)
class Host:
    """What the panel knows where it runs, for a target's checks."""

    accel: Accelerator
    selected_cards: tuple[int, ...] = ()
    env_fixes: Mapping[str, str] = field(default_factory=dict)
    """The Checklist's environment fixes, applied to every job."""
    env: Mapping[str, str] | None = None
    """The environment jobs start with (None: this process's)."""


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
    name: str
    runs_here: bool
    """Its processes run on this host (the host's accelerator and cards matter to `check`)."""
    starts_ranks: bool
    """It starts every rank itself, one task per card (Slurm's srun), with the kind's `rank_argv`,
    `rank_env` and `rank_cwd`: a kind's own launcher does not run there."""
    remote_files: bool
    """The job's files (checkpoints, a command's output folder) are only on the cluster: the panel
    knows them from the mirrored log (`newest_checkpoint` from `save` events), never by listing."""

    def check(self, spec: JobSpec, host: Host) -> tuple[JobSpec, list[Problem]]:
        """The spec as it will run there, and the target's own problems with it (the shared
        validation runs after, on the prepared spec). May ask the cluster: call off the UI thread."""
        ...

    def label(self, spec: JobSpec) -> str:
        """The accelerator column of status.json: "cpu", "hpu", "ray:hpu"."""
        ...

    def summary(self, spec: JobSpec) -> str:
        """Where and how a prepared spec runs, in words: "cpu (2 process(es), torchrun)"."""
        ...

    def supervise(self, attempt: Attempt) -> int:
        """Run the attempt to its end, record the outcome in status.json; the supervisor's exit code."""
        ...

    def request_stop(self, run: RunFolder) -> None:
        """Graceful stop of every rank at one step with one checkpoint."""
        ...

    def kill(self, run: RunFolder, status: JobStatus, cancel: threading.Event | None) -> str:
        """End the attempt when no supervisor is alive to do it; bounded; returns what was done
        (the error line of the cancelled job). Raises TargetError when it cannot."""
        ...

    def presence(self, run: RunFolder, status: JobStatus) -> Presence:
        """running / ended / unknown, bounded in time. Unknown is never ended."""
        ...

    def newest_checkpoint(self, run: RunFolder) -> Path | None:
        """The newest complete checkpoint a new attempt can continue from (where the job saves)."""
        ...

    def where(self, run: RunFolder) -> str:
        """Where the job runs, one line for the job list ('' when it says nothing more)."""
        ...

    def details(self, run: RunFolder) -> str:
        """More about where it runs for the details pane (may ask the cluster; bounded)."""
        ...


def get(name: str) -> Target:
    try:
        module = TARGETS[name]
    except KeyError:
        raise TargetError(f"no target {name!r}; targets are: {', '.join(TARGETS)}") from None
    target: Target = importlib.import_module(module).TARGET
    return target


def for_spec(spec: JobSpec) -> Target:
    return get(spec.target)
