"""The insight's points of metrics.jsonl: each `log` line's step, time, graphs and memory, the step
of the latest `begin` (a resume) and the peak memory of the newest `summary`.

A first read goes backwards from the end and parses only the lines it still needs: the newest POINTS
log points that no later `begin` undid, the latest `begin`, the newest `summary` with a peak. Once
those are known, the rest of a long history is searched for their words, not parsed (1,000,000
lines: a forward parse of every line took 9 s of CPU). Lines appended later are applied forwards
(`apply`), where a `begin` drops the points logged after its step.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import BinaryIO

from gaudi_tui.core.jobs.summary import LOG, chunks_backwards, event_of
from gaudi_tui.core.untrusted.data import number

POINTS = 4096
BEGIN, SUMMARY = b'"begin"', b'"summary"'


@dataclass(frozen=True)
class Point:
    step: int
    time: float
    graphs: int | None = None
    max_memory_mib: float | None = None
    total_memory_mib: float | None = None


def _step(event: dict) -> int:
    step = event.get("step")
    return step if isinstance(step, int) else 0


def point_of(event: dict) -> Point:
    """The point of a `log` event."""
    graphs = event.get("graph_compilations")
    return Point(
        _step(event),
        number(event.get("time")) or 0.0,
        graphs if isinstance(graphs, int) else None,
        number(event.get("max_memory_mib")),
        number(event.get("total_memory_mib")),
    )


class Points:
    """The points of one metrics.jsonl, bounded to the newest POINTS."""

    def __init__(self) -> None:
        self.points: deque[Point] = deque(maxlen=POINTS)
        self.begin_step = 0
        self.summary_peak: float | None = None

    def apply(self, event: dict) -> None:
        """One event appended after those read so far."""
        kind = event.get("event")
        if kind == "begin":
            self.begin_step = step = _step(event)
            kept = [p for p in self.points if p.step <= step]
            self.points.clear()
            self.points.extend(kept)
        elif kind == "log":
            self.points.append(point_of(event))
        elif kind == "summary" and (peak := number(event.get("max_memory_mib"))) is not None:
            self.summary_peak = peak

    def read_back(self, fh: BinaryIO, end: int) -> None:
        """The state after the complete lines before byte `end` (none read before), read from the end."""
        back = _Backwards()
        for chunk in chunks_backwards(fh, end):
            if not back.take_lines(chunk):
                break
        self.points.extend(reversed(back.newest))
        self.begin_step = back.begin_step if back.begin_step is not None else 0
        self.summary_peak = back.summary_peak


class _Backwards:
    """What a backward read has found so far, and the words of the lines it still needs."""

    def __init__(self) -> None:
        self.newest: list[Point] = []
        """The newest points first."""
        self.limit = math.inf
        """The lowest step of the begins after the line being read: an older point above it was undone."""
        self.begin_step: int | None = None
        self.summary_peak: float | None = None

    def words(self) -> tuple[bytes, ...]:
        collecting = len(self.newest) < POINTS
        wanted = (
            (LOG, collecting),
            (BEGIN, collecting or self.begin_step is None),
            (SUMMARY, self.summary_peak is None),
        )
        return tuple(word for word, want in wanted if want)

    def take_lines(self, chunk: bytes) -> bool:
        """Take the lines of `chunk` it needs, the last first; False once it needs none."""
        words = self.words()
        if not words:
            return False
        if not any(w in chunk for w in words):
            return True
        for line in reversed(chunk.split(b"\n")):
            if any(w in line for w in words) and (event := event_of(line)) is not None:
                self._take(event)
                words = self.words()
                if not words:
                    return False
        return True

    def _take(self, event: dict) -> None:
        kind = event.get("event")
        if kind == "log" and len(self.newest) < POINTS and (point := point_of(event)).step <= self.limit:
            self.newest.append(point)
        elif kind == "begin":
            step = _step(event)
            self.begin_step = step if self.begin_step is None else self.begin_step
            self.limit = min(self.limit, step)
        elif kind == "summary" and self.summary_peak is None:
            self.summary_peak = number(event.get("max_memory_mib"))
