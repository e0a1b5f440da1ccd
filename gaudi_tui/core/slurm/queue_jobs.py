"""The jobs of one queue answer, in squeue's order, as a sequence that also says each job's id, user
and state without the rest (`briefs`). A queue of 10,000 jobs is ordered, filtered and counted by
these; only the jobs someone reads are decoded (the rows a screen shows, a supervisor's own job).

This class holds jobs already decoded (the JSON form, a test's jobs); queue_fields.AnswerJobs
decodes each job of the text form when it is first read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import overload

from gaudi_tui.core.slurm.model import QueueJob

Brief = tuple[int, str, str]
"""What ordering and counting a queue needs of a job, as its QueueJob has them: (job id, user,
state). A plain tuple: one is made for every job of every answer."""


class QueueJobs(Sequence[QueueJob]):
    """Jobs in squeue's order; `job(id)` finds one, `briefs()` says each one's id, user and state."""

    def __init__(self, jobs: Iterable[QueueJob] = ()) -> None:
        self._jobs = tuple(jobs)
        self._ids: dict[int, int] | None = None

    def __len__(self) -> int:
        return len(self._jobs)

    @overload
    def __getitem__(self, index: int) -> QueueJob: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[QueueJob]: ...
    def __getitem__(self, index: int | slice) -> QueueJob | Sequence[QueueJob]:
        if isinstance(index, slice):
            return [self.at(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.at(index)

    def at(self, index: int) -> QueueJob:
        """The job at `index` (0 ≤ index < len)."""
        return self._jobs[index]

    def briefs(self) -> Sequence[Brief]:
        return [(j.job_id, j.user, j.state) for j in self._jobs]

    def job(self, job_id: int) -> QueueJob | None:
        """The job with this id (the last one listed with it), None when the queue has none."""
        if self._ids is None:
            self._ids = {b[0]: i for i, b in enumerate(self.briefs())}
        index = self._ids.get(job_id)
        return None if index is None else self.at(index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (QueueJobs, list, tuple)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to a list or tuple of the same jobs, as they are

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} jobs)"


class Picked(QueueJobs):
    """Some of a queue's jobs in an order of their own (places in `jobs`: table.order), read
    through it: nothing is decoded until read."""

    def __init__(self, jobs: QueueJobs, places: list[int]) -> None:
        super().__init__()
        self._of, self._places = jobs, places
        self._briefs: list[Brief] | None = None

    def __len__(self) -> int:
        return len(self._places)

    def at(self, index: int) -> QueueJob:
        return self._of.at(self._places[index])

    def briefs(self) -> Sequence[Brief]:
        if self._briefs is None:
            of = self._of.briefs()
            self._briefs = [of[i] for i in self._places]
        return self._briefs
