"""One `squeue` for everyone: a snapshot of the queue, cached, shared by the panel's views and by
every supervisor of this machine. The call prints only the fields they read, in squeue's text form
(queue_fields.py; `squeue --json` where that squeue cannot).

In one process, callers within `max_age` get the same snapshot and concurrent callers wait for the
one call in flight. Across processes (each job has its own supervisor), the snapshot is also
written to a small file beside the runs (`<state>/slurm/queue-<cluster>-answer.json`: what squeue
printed, which each reader decodes job by job as its own poll would; writing the decoded jobs cost
more than decoding them); a process whose own copy is older reads the file first and calls squeue only
when the file is older too, under an `fcntl` lock, so N jobs cost one call a refresh, not N.

Nothing here may break a caller: any failure of the call (a document it cannot read, a byte that is
not UTF-8) is a snapshot with `error`; a lock that cannot be taken (NFS without locks) or is not
free within LOCK_WAIT_S means a call of our own without the shared file. A snapshot is fresh only
while every clock says so: its wall-clock time is not in the future (beyond CLOCK_SKEW_S: a clock
step, another host's clock on a shared home) and, when it was taken on this boot, its monotonic
time too (a wall-clock step moves neither).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import orjson

from gaudi_tui.core.slurm import queue_fields
from gaudi_tui.core.slurm.cli import Slurm, SlurmError, conf_key
from gaudi_tui.core.slurm.model import QueueJob
from gaudi_tui.core.slurm.queue_jobs import QueueJobs
from gaudi_tui.core.untrusted.files import load_json

MAX_AGE_S = 2.0
LOCK_WAIT_S = 20.0
"""How long to wait for the shared file's lock (its holder's squeue has a 15 s limit)."""
CLOCK_SKEW_S = 1.0
"""How far in the future a snapshot's wall-clock time may be and still count (clocks of hosts
sharing a home differ a little)."""
LOCK_TRY_S = 0.05
SNAPSHOT_LIMIT = 64 << 20
"""The most a shared queue snapshot may hold (10,000 jobs are about 26 MB): a larger one is not read."""


@functools.cache
def boot_id() -> str:
    """This boot (monotonic times compare only within one); read once, on first use."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


@dataclass(frozen=True)
class Snapshot:
    """The queue at `taken` (epoch s). `error` set: the controller did not answer and nothing in
    the queue is known (never read as "ended")."""

    taken: float
    jobs: QueueJobs = field(default_factory=QueueJobs)
    """In squeue's order; a tuple or list given here is held as QueueJobs."""
    error: str | None = None
    mono: float | None = None
    """`time.monotonic()` when taken, valid on the boot `boot`."""
    boot: str = ""
    answer: queue_fields.Answer | None = field(default=None, compare=False, repr=False)
    """What squeue printed (written to the shared file instead of the jobs)."""

    def __post_init__(self) -> None:
        if not isinstance(self.jobs, QueueJobs):
            object.__setattr__(self, "jobs", QueueJobs(self.jobs))

    def job(self, job_id: int) -> QueueJob | None:
        return self.jobs.job(job_id)

    def to_json(self) -> dict[str, object]:
        """The answer's text, not its jobs: a reader decodes only the jobs that changed since its last
        read (queue_fields.py), and writing 1,000 decoded jobs cost more than decoding them."""
        if self.error is None and self.answer is None:
            raise ValueError("a snapshot is written with the answer its jobs came from")
        answer = [self.answer.text, self.answer.sep] if self.answer is not None else None
        return {
            "taken": self.taken,
            "mono": self.mono,
            "boot": self.boot,
            "error": self.error,
            "answer": answer,
        }

    def file_bytes(self) -> bytes:
        """What the shared file holds: to_json as JSON (orjson writes the 5 MB answer of 10,000 jobs
        in ~5 ms, json.dumps in ~15, at every refresh)."""
        return orjson.dumps(self.to_json())

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Snapshot:
        """A written snapshot (ValueError, SlurmError or TypeError for one this cannot read: without
        an error, a snapshot without the answer is not an empty queue)."""
        error, mono, answer = data.get("error"), data.get("mono"), data.get("answer")
        read = None
        if not error:
            if not (
                isinstance(answer, list) and len(answer) == 2 and all(isinstance(a, str) for a in answer)
            ):
                raise ValueError("a written snapshot without its answer")
            read = queue_fields.Answer(*answer)
        return cls(
            float(data.get("taken") or 0.0),  # type: ignore[arg-type]
            read.jobs() if read is not None else QueueJobs(),
            str(error) if error else None,
            mono=float(mono) if isinstance(mono, (int, float)) else None,
            boot=str(data.get("boot") or ""),
            answer=read,
        )

    def age(self, now: float) -> float | None:
        """Seconds since it was taken; None when a clock says it comes from the future."""
        wall = now - self.taken
        if wall < -CLOCK_SKEW_S:
            return None
        if self.mono is not None and self.boot and self.boot == boot_id():
            mono = time.monotonic() - self.mono
            if mono < 0:
                return None
            wall = max(wall, mono)
        return max(wall, 0.0)


def take(slurm: Slurm, clock: Callable[[], float] = time.time) -> Snapshot:
    """A fresh snapshot (one squeue call), stamped with the time the call began. Any
    failure is the snapshot's `error`: a stranger's job must not break a supervisor's poll."""
    now, mono = clock(), time.monotonic()
    try:
        answer, jobs = queue_fields.read(slurm)
        return Snapshot(now, jobs, mono=mono, boot=boot_id(), answer=answer)
    except SlurmError as exc:
        return Snapshot(now, error=str(exc), mono=mono, boot=boot_id())
    except Exception as exc:  # noqa: BLE001 - a queue document this code cannot read is an error, not a crash
        error = f"the Slurm queue could not be read ({type(exc).__name__}: {exc}); the queue is unknown"
        return Snapshot(now, error=error, mono=mono, boot=boot_id())


class QueuePoll:
    """The shared snapshot for one cluster; `get()` returns one no older than `max_age`."""

    def __init__(
        self,
        slurm: Slurm,
        max_age: float = MAX_AGE_S,
        cache: Path | None = None,
        clock: Callable[[], float] = time.time,
        lock_wait: float = LOCK_WAIT_S,
    ) -> None:
        self.slurm = slurm
        self.max_age = max_age
        self.cache = cache
        self.clock = clock
        self.lock_wait = lock_wait
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
        if snap is None:
            return False
        seconds = snap.age(self.clock())
        return seconds is not None and seconds < age

    def _take(self) -> Snapshot:
        self.calls += 1
        return take(self.slurm, self.clock)

    def _through_file(self, age: float) -> Snapshot:
        assert self.cache is not None
        try:
            self.cache.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            lock = open(self.cache.with_suffix(".lock"), "a")  # noqa: SIM115 - closed below
        except OSError:
            return self._take()  # no shared file here: a call of our own
        with lock:
            if not self._flock(lock):
                return self._take()
            snap = _read(self.cache)
            if self._fresh(snap, age):
                assert snap is not None
                return snap
            snap = self._take()
            tmp = self.cache.with_suffix(f".{os.getpid()}.tmp")
            with contextlib.suppress(OSError):
                tmp.write_bytes(snap.file_bytes())
                os.replace(tmp, self.cache)
            return snap

    def _flock(self, lock: IO[str]) -> bool:
        """The file's lock within `lock_wait`; False when it cannot be had (no locks on this
        filesystem, or a holder that does not let go)."""
        deadline = time.monotonic() + self.lock_wait
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(LOCK_TRY_S)
            except OSError:
                return False


def _read(path: Path) -> Snapshot | None:
    try:
        return Snapshot.from_json(load_json(path, limit=SNAPSHOT_LIMIT))  # type: ignore[arg-type]
    except (OSError, ValueError, TypeError, KeyError, AttributeError, SlurmError):
        return None


_POLLS: dict[str, QueuePoll] = {}
_POLLS_LOCK = threading.Lock()


def cache_path(key: str) -> Path:
    from gaudi_tui.core import paths

    digest = hashlib.blake2b(key.encode(), digest_size=6).hexdigest()
    return (
        paths.state_dir() / "slurm" / f"queue-{digest}-answer.json"
    )  # earlier versions wrote decoded jobs to queue-<digest>.json


def shared(slurm: Slurm | None = None) -> QueuePoll:
    """This process's poll for the cluster `slurm` reaches (one per SLURM_CONF)."""
    slurm = slurm or Slurm()
    key = conf_key(slurm.env)
    with _POLLS_LOCK:
        poll = _POLLS.get(key)
        if poll is None:
            poll = _POLLS[key] = QueuePoll(slurm, cache=cache_path(key))
        return poll
