"""A job's run folder under `runs_dir()` (mode 0700), as laid out in docs/architecture.md.

```
<run-id>/spec.toml  status.json  metrics.jsonl  stdout.log  checkpoints/  STOP  model/
```
"""

from __future__ import annotations

import os
import re
import secrets
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from gaudi_tui.core import paths, settings
from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs import status as status_mod
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus
from gaudi_tui.core.untrusted.files import write_atomic

COMPLETE_MARKER = "gaudi-tui-complete"
"""Written into a checkpoint by rank 0 after every rank has finished saving it."""
WEIGHT_FILES = ("model.safetensors", "adapter_model.safetensors", "pytorch_model.bin", "adapter_model.bin")
SHARDED_INDEX = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


class RunNotFound(LookupError):
    pass


def runs_dir() -> Path:
    """Training run folders; private to the user (0700). `runs_dir` in config.toml (or
    $GAUDI_TUI_RUNS_DIR) moves them; the default is `<state>/runs`."""
    path = settings.runs_dir_setting() or paths.state_dir() / "runs"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


@dataclass(frozen=True)
class RunFolder:
    """One run's folder. The paths of the files a poll stats are made once (a list of a thousand
    runs stats three of them in each at its first poll)."""

    path: Path

    @property
    def id(self) -> str:
        return self.path.name

    @cached_property
    def spec_path(self) -> Path:
        return self.path / "spec.toml"

    @cached_property
    def status_path(self) -> Path:
        return self.path / "status.json"

    @cached_property
    def metrics_path(self) -> Path:
        return self.path / "metrics.jsonl"

    @cached_property
    def log_path(self) -> Path:
        return self.path / "stdout.log"

    @property
    def checkpoints_dir(self) -> Path:
        return self.path / "checkpoints"

    @cached_property
    def stop_path(self) -> Path:
        return self.path / "STOP"

    @property
    def model_dir(self) -> Path:
        """The final weights (or adapter) of a job that finished."""
        return self.path / "model"

    @property
    def hpu_metrics_path(self) -> Path:
        """`PT_HPU_METRICS_FILE` of the job (Gaudi only; the runtime adds `-rank<N>` under torchrun)."""
        return self.path / "hpu_metrics.json"

    def spec(self) -> JobSpec:
        return spec_mod.load(self.spec_path)

    def row_spec(self) -> JobSpec:
        """The spec's fields a row of the job list shows (spec.load_row)."""
        return spec_mod.load_row(self.spec_path)

    def status(self) -> JobStatus | None:
        return status_mod.read(self.status_path)

    def write_status(self, status: JobStatus) -> None:
        status_mod.write(self.status_path, status)

    def stop_requested(self) -> bool:
        return self.stop_path.exists()

    def request_stop(self) -> None:
        self.stop_path.touch()

    def newest_complete_checkpoint(self) -> Path | None:
        """The checkpoint with the highest step that every rank finished writing."""
        found = [c for c in self.checkpoints() if is_complete(c)]
        return found[-1] if found else None

    def checkpoints(self) -> list[Path]:
        """checkpoint-N folders, oldest step first."""
        if not self.checkpoints_dir.is_dir():
            return []
        pairs = []
        for child in self.checkpoints_dir.iterdir():
            match = re.fullmatch(r"checkpoint-(\d+)", child.name)
            if match and child.is_dir():
                pairs.append((int(match.group(1)), child))
        return [p for _, p in sorted(pairs)]


def is_complete(checkpoint: Path) -> bool:
    """Weights + trainer_state.json present, our completion marker written, no Trainer sentinel."""
    has_weights = any((checkpoint / name).is_file() for name in WEIGHT_FILES + SHARDED_INDEX)
    return (
        has_weights
        and (checkpoint / "trainer_state.json").is_file()
        and (checkpoint / COMPLETE_MARKER).is_file()
        and not (checkpoint / "checkpoint-is-incomplete.txt").exists()
    )


def checkpoint_step(checkpoint: Path) -> int:
    return int(checkpoint.name.rsplit("-", 1)[1])


def file_size(path: Path) -> int:
    """The size of a run folder's file (0 when it is missing or unreadable): where a mirror of a
    cluster's log starts again."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def truncate(path: Path, size: int) -> None:
    """Cut a mirrored file back to `size`, to mirror it afresh from there (a missing file is fine)."""
    try:
        with path.open("r+b") as fh:
            fh.truncate(size)
    except OSError:
        pass


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:24] or "job"


def create(spec: JobSpec, accelerator: str, now: float | None = None) -> RunFolder:
    """A new run folder holding the spec and a queued status."""
    now = time.time() if now is None else now
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    root = runs_dir()
    while True:
        path = root / f"{stamp}-{_slug(spec.name)}-{secrets.token_hex(2)}"
        try:
            path.mkdir(mode=0o700)
            break
        except FileExistsError:
            continue
    os.chmod(path, 0o700)
    run = RunFolder(path)
    write_atomic(run.spec_path, spec_mod.to_toml(spec))
    run.write_status(JobStatus(state="queued", created=now, queued=now, accelerator=accelerator))
    return run


def all_runs() -> list[RunFolder]:
    """Every run folder that has a status, oldest first."""
    root = runs_dir()
    runs = [RunFolder(p) for p in root.iterdir() if p.is_dir() and (p / "status.json").exists()]
    return sorted(runs, key=lambda r: r.id)


def find(run_id: str) -> RunFolder:
    """A run by its id or a unique prefix/suffix of it."""
    runs = all_runs()
    exact = [r for r in runs if r.id == run_id]
    if exact:
        return exact[0]
    matches = [r for r in runs if r.id.startswith(run_id) or r.id.endswith(run_id)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise RunNotFound(f"no job {run_id!r}: `gaudi-tui jobs` lists them")
    listed = ", ".join(r.id for r in matches[:5])
    raise RunNotFound(f"{run_id!r} matches {len(matches)} jobs ({listed}): give more of the id")
