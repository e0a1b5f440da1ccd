"""What a job runs: one module per kind, named by the spec's `kind` field.

A job is a kind × a target (`targets/`): the target decides where it runs and how it is watched;
the kind decides what runs there, how it is checked, how metrics are read, how it stops and how it
resumes. `trainer` is the panel's own fine-tune (`worker/train.py`); `command` is the user's own
command (`command.py`, registered by `command_kind.py`); `serve` is a model server (`serve_kind.py`:
the command machinery running `vllm serve` or `transformers serve`). Nothing outside this package names a kind; each module has `KIND`, an
object implementing `Kind`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec

if TYPE_CHECKING:
    from gaudi_tui.core.jobs.targets import Attempt
    from gaudi_tui.core.jobs.validate import Problem

KINDS: dict[str, str] = {
    "trainer": "gaudi_tui.core.jobs.kinds.trainer",
    "command": "gaudi_tui.core.jobs.kinds.command_kind",
    "serve": "gaudi_tui.core.jobs.kinds.serve_kind",
}


@dataclass(frozen=True)
class ClusterEntry:
    """How a target whose job is one entry process on a cluster (Ray's Jobs) starts this kind:
    `python -m <module> --run-id ID --storage DIR [--resume CKPT]` there."""

    module: str
    cpus: int = 0
    hpus: int = 0
    """What the entry process itself asks of its node, where it starts every rank (your command and
    its launcher); 0 and 0: it asks for its workers' own (Ray Train) and runs where drivers run."""
    working_dir: str = ""
    """A folder on this host shipped with the job ('' ships none)."""
    excludes: tuple[str, ...] = ()
    """What of `working_dir` is not shipped (gitwildmatch patterns, as Ray's `excludes`)."""
    words: str = ""
    """How it runs there, for the summary ('' for the target's own words)."""


class OutputWatch(Protocol):
    def start(self) -> None: ...

    def skip_recorded(self, metrics_base: int) -> None:
        """A re-attach reads the attempt's output again from its start: the events written after
        `metrics_base` by the followers before are not written again."""
        ...

    def close(self, stopped: bool) -> None:
        """Read the rest and end the attempt's metrics."""
        ...


class Kind(Protocol):
    name: str
    metrics_from_output: bool
    """Its metrics may be read from what it prints (so 'no metrics found' can be said)."""
    one_task: bool
    """Its job is one process using all the job's cards on one node (a model server: tensor
    parallel over them), not one rank per card: a target that starts the ranks (Slurm) starts one
    task holding every card."""

    def prepare(self, spec: JobSpec) -> JobSpec:
        """The spec after the target's preparation: the kind's own values resolved."""
        ...

    def validate(
        self,
        spec: JobSpec,
        own: list[Problem],
        env: Mapping[str, str],
        device_name: str | None,
        here: bool,
        starts_ranks: bool = False,
    ) -> list[Problem]:
        """Every problem: the target's `own`, then the kind's (the built-in job: `validate.shared`).
        `env` is the job's environment, `device_name` the card generation when known, `here` whether
        the job runs on this host (so files can be checked), `starts_ranks` whether the target starts
        every rank itself (`rank_argv`, no launcher of the kind's own)."""
        ...

    def supervise_here(self, attempt: Attempt) -> int:
        """Run the attempt on this host, in the supervisor (the local target)."""
        ...

    def rank_argv(self, run: RunFolder, spec: JobSpec, resume: Path | None) -> list[str]:
        """What each rank runs when the target starts the ranks itself (one task per card, e.g.
        srun), without a launcher in front; never a shell string."""
        ...

    def rank_env(self, run: RunFolder, spec: JobSpec, base: Mapping[str, str]) -> dict[str, str]:
        """Each rank's environment: `base` plus the kind's (cards, run folder, the wrapper)."""
        ...

    def rank_cwd(self, run: RunFolder, spec: JobSpec) -> Path:
        """The folder every rank starts in when the target starts the ranks itself."""
        ...

    def output_follower(
        self, run: RunFolder, spec: JobSpec, resume: Path | None, attach: bool
    ) -> OutputWatch | None:
        """In a supervisor that tails the ranks' output into stdout.log (Slurm): what reads metrics
        from what is appended from now on, for a new attempt or one re-attached to (`attach`), or
        None when the ranks write metrics themselves."""
        ...

    def cluster_entry(self, spec: JobSpec) -> ClusterEntry:
        """What a cluster target submits as the job's entry point (Ray: the Jobs entrypoint)."""
        ...

    def stops_by_file(self, run: RunFolder, spec: JobSpec) -> bool:
        """The STOP file stops this attempt gracefully (a callback reads it); else a target that
        starts the ranks itself stops them by signals (SIGINT, then ends the job after the grace)."""
        ...

    def newest_checkpoint(self, run: RunFolder, spec: JobSpec, target_says: Path | None) -> Path | None:
        """The checkpoint a new attempt continues from; `target_says` is where the target looked
        (a target with `remote_files`: what its mirrored `save` events say)."""
        ...

    def requeue_checkpoint(self, run: RunFolder, spec: JobSpec) -> Path | None:
        """Where every rank continues from when the target reruns the attempt itself (Slurm's requeue
        reruns the batch script): a complete checkpoint passed with the kind's resume flag
        (`rank_argv`), or None: it runs again from its beginning."""
        ...

    def resume_refusal(self, run: RunFolder, spec: JobSpec) -> str | None:
        """Why this job cannot be resumed at all (before any checkpoint is looked for), or None."""
        ...

    def stop_words(self, run: RunFolder, spec: JobSpec) -> str:
        """What a stop does to this job now, for the screen before the key is pressed."""
        ...

    def finished_words(self, run: RunFolder) -> str:
        """Where a finished job left its result, after 'already finished' ('' when nothing to add)."""
        ...

    def failure_words(self, run: RunFolder) -> str | None:
        """Why a failed attempt failed and its fix, where the kind knows its output (a server's
        port in use, out of memory in warm-up); None: the target's own reading of the log."""
        ...

    def launcher_words(self, spec: JobSpec) -> str:
        """How its processes start, for the job summary: 'single', 'torchrun', 'direct'."""
        ...

    def note(self, run: RunFolder) -> str:
        """What the job list says of it while it runs, beside where ('' for nothing): a server's
        warm-up or address."""
        ...


def get(name: str) -> Kind:
    kind: Kind = importlib.import_module(KINDS[name]).KIND
    return kind


def for_spec(spec: JobSpec) -> Kind:
    return get(spec.kind)
