"""`slurm.json` in the run folder: which Slurm job an attempt is, and what was last seen of it.

A new supervisor re-attaches by `job_id` (or, if the old one died between sbatch and writing it,
by the attempt's job name in the queue); the job list shows `state`/`words`/`nodes` without asking
Slurm; `ranks` is where each rank ran and which cards it got, from the ranks' own lines.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.untrusted.data import record
from gaudi_tui.core.untrusted.files import load_json, write_atomic


@dataclass(frozen=True)
class SlurmRecord:
    attempt: int
    job_name: str
    script: str
    job_id: int | None = None
    conf: str = ""
    """SLURM_CONF of the submitting environment ('' = the system's)."""
    log_base: int = 0
    """Size of stdout.log before this attempt: a re-attach cuts back to it and tails afresh."""
    metrics_base: int | None = None
    """Size of metrics.jsonl before this attempt: its outcome is read from its own events only, and
    what a re-attached output follower finds after it, it wrote already (None: a record from before
    this was kept)."""
    state: str = ""
    words: str = ""
    nodes: list[str] = field(default_factory=list)
    restarts: int = 0
    """Requeues by Slurm seen (a node failure): followed, not new attempts."""
    ranks: dict[str, dict[str, Any]] = field(default_factory=dict)

    def output(self, run: RunFolder) -> Path | None:
        return run.path / "slurm" / f"job-{self.job_id}.out" if self.job_id is not None else None


def path(run: RunFolder) -> Path:
    return run.path / "slurm.json"


def read(run: RunFolder) -> SlurmRecord | None:
    try:
        return record(SlurmRecord, load_json(path(run)), what="slurm.json")
    except (OSError, ValueError):
        return None


def write(run: RunFolder, record: SlurmRecord) -> None:
    write_atomic(path(run), json.dumps(asdict(record), indent=1))
