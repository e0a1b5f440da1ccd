"""What the job list shows of a run's metrics.jsonl, in constant memory, without parsing every line.

The first read goes backwards from the end of the file and stops as soon as the row is known (for
a finished run, a few lines; the last `save` or a metric seen only long ago costs a byte search of
the file, not a parse of it). It jumps from one line that matters to the next by searching for the
words they hold, and keeps the lines only the ETA needs unparsed until a rate is asked for (a list
of finished runs never asks). Later reads apply only the lines appended since, as
`MetricsReader` would. A `begin` (resume) appended later, or a file that shrank (a mirror cut back),
reads the row afresh from the end. Old run folders need nothing new: metrics.jsonl is the source.
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from gaudi_tui.core.untrusted.data import Untrusted, integer, loads, number, text

ETA_WINDOW = 10
LOG = b'"log"'
CHUNK = 1 << 20
FORWARD_LIMIT = 8 << 20
"""More than this appended since the last read: read the row from the end instead."""


@dataclass
class MetricsSummary:
    """The latest attempt's step, loss and ETA inputs, the last checkpoint, whether any event came."""

    max_steps: int | None = None
    begin_step: int = 0
    last_step: int | None = None
    """The step of the last log point that a later `begin` did not drop."""
    loss: float | None = None
    checkpoint: str | None = None
    ended_step: int | None = None
    found: bool = False
    recent: deque[tuple[int, float]] = field(default_factory=lambda: deque(maxlen=ETA_WINDOW))
    """(step, time) of the latest log points of the current attempt (after its `begin`); `points()`
    adds those of `unread` first."""
    unread: list[tuple[int, float] | bytes] = field(default_factory=list)
    """Older points than `recent`'s, oldest first, as a backward read found them: a line kept as its
    bytes is parsed when a rate is asked for (a list of finished runs never asks)."""

    def points(self) -> deque[tuple[int, float]]:
        if self.unread:
            older = [p if isinstance(p, tuple) else point_of(p) for p in self.unread]
            self.recent = deque([*(p for p in older if p), *self.recent], maxlen=ETA_WINDOW)
            self.unread = []
        return self.recent

    @property
    def step(self) -> int:
        if self.ended_step is not None:
            return self.ended_step
        return self.last_step if self.last_step is not None else self.begin_step

    def seconds_per_step(self) -> float | None:
        recent = [p for p in self.points() if p[0] > self.begin_step]
        if len(recent) < 2 or recent[-1][0] == recent[0][0]:
            return None
        return (recent[-1][1] - recent[0][1]) / (recent[-1][0] - recent[0][0])

    def apply(self, event: dict) -> bool:
        """Apply one event read forwards; False for a `begin`, which needs a fresh read."""
        self.found = True
        step = int(event.get("step") or 0)
        kind = event.get("event")
        if isinstance(event.get("max_steps"), int):
            self.max_steps = event["max_steps"]
        if kind == "begin":
            return False
        if kind == "log":
            self.last_step = step
            self.recent.append((step, float(event.get("time") or 0.0)))
            loss = number(event.get("loss"))
            if loss is not None:
                self.loss = loss
        elif kind == "save":
            self.checkpoint = event.get("checkpoint")
        elif kind == "end":
            self.ended_step = step
        return True


def event_of(line: bytes | str) -> dict | None:
    """One line of metrics.jsonl as its event, or None for a line to skip: not a JSON object, or
    one a reader cannot hold (untrusted.data: an integer past 64 bits, nesting past its bound, a
    string that is not text), or one whose `step` is not a whole number or `time` not a number (a
    hand-written or damaged line: the readers rely on those two). A NaN or infinite figure (a loss
    that diverged) reads as None; `max_steps`, `world_size`, `graph_compilations` and `checkpoint`
    of the wrong kind are dropped, so every reader may take them as they are."""
    try:
        event = loads(line, what="a metrics.jsonl line", nonfinite=True)
    except Untrusted:
        return None
    if not isinstance(event, dict):
        return None
    for key, check in _REQUIRED.items():
        if key in event:
            if (value := check(event[key])) is None:
                return None
            event[key] = value
    for key, check in _CHECKED.items():
        if key in event:
            if (value := check(event[key])) is None:
                del event[key]
            else:
                event[key] = value
    return event


def _whole(value: object) -> int | None:
    return integer(value, lo=0)


def _path(value: object) -> str | None:
    return text(value, max_chars=4096)


_REQUIRED: dict[str, Callable[[object], object]] = {"step": _whole, "time": number}
_CHECKED: dict[str, Callable[[object], object]] = {
    "max_steps": _whole,
    "world_size": _whole,
    "graph_compilations": _whole,
    "checkpoint": _path,
}


def point_of(line: bytes) -> tuple[int, float] | None:
    """(step, time) of a log line, else None."""
    event = event_of(line)
    if event is None or event.get("event") != "log":
        return None
    return int(event.get("step") or 0), float(event.get("time") or 0.0)


def chunks_backwards(fh: BinaryIO, end: int) -> Iterator[bytes]:
    """The complete lines before byte `end`, in chunks of whole lines of about CHUNK bytes, the last
    chunk first."""
    position, carry = end, b""
    while position > 0:
        start = max(0, position - CHUNK)
        fh.seek(start)
        data = fh.read(position - start) + carry
        position = start
        if position > 0:
            carry, _, data = data.partition(b"\n")
        yield data


def lines_end(fh: BinaryIO, size: int) -> int:
    """Where the last complete line of the first `size` bytes ends (a half-written line waits)."""
    end = size
    while end > 0:
        start = max(0, end - CHUNK)
        fh.seek(start)
        cut = fh.read(end - start).rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


class _Backwards:
    """Fills a MetricsSummary from the last line back; knows which words a line must hold to matter."""

    def __init__(self) -> None:
        self.summary = MetricsSummary()
        self.begin_seen = False
        self.ended_known = False
        self.min_begin = math.inf
        self.window: list[tuple[int, float] | bytes] = []
        """The ETA's points, the latest first: a line that only they need is kept unparsed."""

    def window_open(self) -> bool:
        """The last step is known and the window wants more points (log lines, kept unparsed)."""
        return self.summary.last_step is not None and not self.begin_seen and len(self.window) < ETA_WINDOW

    def needs(self) -> tuple[bytes, ...]:
        """The words of a line that must be parsed now."""
        s = self.summary
        words: list[bytes] = []
        if not s.found:
            words.append(b"{")
        if s.last_step is None:
            words += [LOG, b'"begin"']
        elif self.window_open():
            words.append(b'"begin"')
        if s.loss is None:
            words += [b'"loss"', b'"begin"']
        if not self.ended_known:
            words += [b'"end"', b'"begin"']
        if s.max_steps is None:
            words.append(b'"max_steps"')
        if s.checkpoint is None:
            words.append(b'"save"')
        return tuple(words)

    def take_lines(self, chunk: bytes) -> bool:
        """Take the lines of `chunk` that matter, the last first, each found by a word it holds (a
        search of the chunk per word, not a look at every line); False once nothing more is needed."""
        limit, last = len(chunk), dict[bytes, int]()  # each word's last place before `limit`, -1: none
        while True:
            words = self.needs()
            look = (*words, LOG) if self.window_open() else words
            if not look:
                return False
            at = -1
            for word in look:
                if last.get(word, limit) >= limit:
                    last[word] = chunk.rfind(word, 0, limit)
                at = max(at, last[word])
            if at < 0:
                return True
            start, stop = chunk.rfind(b"\n", 0, at) + 1, chunk.find(b"\n", at)
            line, limit = chunk[start : stop if stop >= 0 else len(chunk)], start
            if not any(w in line for w in words):
                self.window.append(line)  # only the window wants it: parsed if a rate is asked for
            elif (event := event_of(line)) is not None:
                self.take(event)

    def take(self, event: dict) -> None:
        s = self.summary
        s.found = True
        kind = event.get("event")
        step = int(event.get("step") or 0)
        if s.max_steps is None and isinstance(event.get("max_steps"), int):
            s.max_steps = event["max_steps"]
        if kind == "begin":
            if not self.begin_seen:
                self.begin_seen, s.begin_step = True, step
            self.ended_known = True
            self.min_begin = min(self.min_begin, step)
        elif kind == "end" and not self.ended_known:
            self.ended_known, s.ended_step = True, step
        elif kind == "save" and s.checkpoint is None:
            s.checkpoint = event.get("checkpoint")
        elif kind == "log" and step <= self.min_begin:
            if s.last_step is None:
                s.last_step = step
            if not self.begin_seen and len(self.window) < ETA_WINDOW:
                self.window.append((step, float(event.get("time") or 0.0)))
            if s.loss is None:
                s.loss = number(event.get("loss"))


def read_backwards(fh: BinaryIO, end: int) -> MetricsSummary:
    """The summary of the complete lines before byte `end`, read from the end back only as far as needed."""
    scan = _Backwards()
    try:
        for chunk in chunks_backwards(fh, end):
            if not scan.take_lines(chunk):
                break
    except OSError:
        pass
    scan.summary.unread = scan.window[::-1]
    return scan.summary


class SummaryReader:
    """Keeps the MetricsSummary of a growing metrics.jsonl, reading each byte once in the usual case."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        """The end of the last complete line read."""
        self.summary = MetricsSummary()
        self._read = False

    def poll(self) -> bool:
        """True when the summary may have changed."""
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return False
        if self._read and size == self.offset:
            return False
        if not self._read or size < self.offset or size - self.offset > FORWARD_LIMIT:
            return self._from_the_end(size)
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                data = fh.read(size - self.offset)
        except OSError:
            return False
        complete = data.rfind(b"\n") + 1
        if not complete:
            return False
        self.offset += complete
        for line in data[:complete].split(b"\n"):
            event = event_of(line) if line.strip() else None
            if event is not None and not self.summary.apply(event):
                return self._from_the_end(self.offset)
        return True

    def _from_the_end(self, size: int) -> bool:
        try:
            with self.path.open("rb") as fh:
                end = lines_end(fh, size)
                self.summary = read_backwards(fh, end)
        except OSError:
            return False
        self.offset, self._read = end, True
        return True
