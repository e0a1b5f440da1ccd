"""One `squeue --json` for everyone: a snapshot of the queue, cached, shared by the panel's views
and by every supervisor of this machine.

In one process, callers within `max_age` get the same snapshot and concurrent callers wait for the
one call in flight. Across processes (each job has its own supervisor), the snapshot is also
written to a small file beside the runs (`<state>/slurm/queue-<cluster>.json`, compact: only what
`QueueJob` keeps); a process whose own copy is older reads the file first and calls squeue only
when the file is older too, under an `fcntl` lock, so N jobs cost one call a refresh, not N.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gaudi_tui.core.slurm.cli import Slurm, SlurmError, conf_key
from gaudi_tui.core.slurm.model import QueueJob
from gaudi_tui.core.slurm.queue_text import jobs_from_text

MAX_AGE_S = 2.0


@dataclass(frozen=True)
class Snapshot:
    """The queue at `taken` (epoch s). `error` set: the controller did not answer and nothing in
    the queue is known (never read as "ended")."""

    taken: float
    jobs: tuple[QueueJob, ...] = ()
    error: str | None = None
    by_id: dict[int, QueueJob] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_id", {j.job_id: j for j in self.jobs})

    def job(self, job_id: int) -> QueueJob | None:
        return self.by_id.get(job_id)

    def to_json(self) -> dict[str, object]:
        return {"taken": self.taken, "error": self.error, "jobs": [dataclasses.asdict(j) for j in self.jobs]}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Snapshot:
        jobs = []
        for row in data.get("jobs") or []:  # type: ignore[attr-defined]
            row = dict(row)
            for key in ("nodes",):
                row[key] = tuple(row[key])
            row["cards_by_node"] = {k: tuple(v) for k, v in row["cards_by_node"].items()}
            jobs.append(QueueJob(**row))
        error = data.get("error")
        return cls(float(data.get("taken") or 0.0), tuple(jobs), str(error) if error else None)  # type: ignore[arg-type]


def take(slurm: Slurm, clock: Callable[[], float] = time.time) -> Snapshot:
    """A fresh snapshot (one squeue --json call), stamped with the time the call began."""
    now = clock()
    try:
        return Snapshot(now, tuple(jobs_from_text(slurm.squeue_text())))
    except SlurmError as exc:
        return Snapshot(now, error=str(exc))


class QueuePoll:
    """The shared snapshot for one cluster; `get()` returns one no older than `max_age`."""

    def __init__(
        self,
        slurm: Slurm,
        max_age: float = MAX_AGE_S,
        cache: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.slurm = slurm
        self.max_age = max_age
        self.cache = cache
        self.clock = clock
        self.calls = 0
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None

    def get(self, max_age: float | None = None) -> Snapshot:
        age = self.max_age if max_age is None else max_age
        with self._lock:
            if self._fresh(self._snapshot, age):
                assert self._snapshot is not None
                return self._snapshot
            if self.cache is None:
                self._snapshot = self._take()
                return self._snapshot
            self._snapshot = self._through_file(age)
            return self._snapshot

    def _fresh(self, snap: Snapshot | None, age: float) -> bool:
        return snap is not None and self.clock() - snap.taken < age

    def _take(self) -> Snapshot:
        self.calls += 1
        return take(self.slurm, self.clock)

    def _through_file(self, age: float) -> Snapshot:
        assert self.cache is not None
        self.cache.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.cache.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # bounded: the holder's squeue call has its own limit
            snap = _read(self.cache)
            if self._fresh(snap, age):
                assert snap is not None
                return snap
            snap = self._take()
            tmp = self.cache.with_suffix(f".{os.getpid()}.tmp")
            with contextlib.suppress(OSError):
                tmp.write_text(json.dumps(snap.to_json(), separators=(",", ":")))
                os.replace(tmp, self.cache)
            return snap


def _read(path: Path) -> Snapshot | None:
    try:
        return Snapshot.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError, KeyError):
        return None


_POLLS: dict[str, QueuePoll] = {}
_POLLS_LOCK = threading.Lock()


def cache_path(key: str) -> Path:
    from gaudi_tui.core import paths

    digest = hashlib.blake2b(key.encode(), digest_size=6).hexdigest()
    return paths.state_dir() / "slurm" / f"queue-{digest}.json"


def shared(slurm: Slurm | None = None) -> QueuePoll:
    """This process's poll for the cluster `slurm` reaches (one per SLURM_CONF)."""
    slurm = slurm or Slurm()
    key = conf_key(slurm.env)
    with _POLLS_LOCK:
        poll = _POLLS.get(key)
        if poll is None:
            poll = _POLLS[key] = QueuePoll(slurm, cache=cache_path(key))
        return poll
