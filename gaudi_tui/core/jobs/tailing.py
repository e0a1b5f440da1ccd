"""Reading files a job only appends to: their new complete lines (`AppendReader`), the events of
metrics.jsonl (`MetricsReader`) and a bounded tail of a log (`LogTail`). Each keeps a byte offset and
reads only what was appended; a half-written last line waits for the next read."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path

from gaudi_tui.core.jobs.summary import ETA_WINDOW, event_of, number


@dataclass(frozen=True)
class LogPoint:
    """One `log` event of metrics.jsonl."""

    step: int
    time: float
    loss: float | None = None
    learning_rate: float | None = None
    grad_norm: float | None = None
    samples_per_s: float | None = None
    tokens_per_s: float | None = None
    memory_mib: float | None = None
    graph_compilations: int | None = None


OPEN_LINE_LIMIT = 64 * 1024
"""The most of a line without its end kept between reads (a binary dump, a bar drawn with \\b)."""


class AppendReader:
    """Complete new lines of a file that only grows (restarts from 0 if it shrinks). A line longer
    than `OPEN_LINE_LIMIT` before its end comes is kept to that (`_bounded`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""
        self.behind = 0
        """Bytes written that the last read left for the next one (`at_most`)."""

    def read_lines(self, max_bytes: int | None = None, at_most: int | None = None) -> tuple[list[str], int]:
        """New complete lines, and how many bytes were skipped to honour `max_bytes` (the newest
        `max_bytes` are kept). `at_most`: read no more than this many bytes now, the rest at the next
        read (nothing skipped; `behind` says how many are left)."""
        try:
            size = self.path.stat().st_size
        except OSError:  # gone (deleted mid catch-up): nothing is left to read, so nothing is behind
            self.behind = 0
            return [], 0
        if size < self.offset:
            self.offset, self.partial = 0, b""
        if size == self.offset:
            return [], 0
        skipped = 0
        if max_bytes is not None and size - self.offset > max_bytes:
            skipped = size - max_bytes - self.offset
            self.offset, self.partial = size - max_bytes, b""
        want = size - self.offset if at_most is None else min(size - self.offset, at_most)
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read(want)
        except OSError:
            self.behind = 0
            return [], 0
        self.offset += len(chunk)
        self.behind = size - self.offset
        if skipped:
            chunk = chunk.split(b"\n", 1)[1] if b"\n" in chunk else b""  # drop the cut first line
        *complete, rest = chunk.split(b"\n")  # only the new bytes are searched
        if complete:
            complete[0], self.partial = self.partial + complete[0], rest
        else:
            self.partial += rest
        self.partial = _bounded(self.partial)
        # A progress bar redraws itself with \r: keep what a terminal would show, the last redraw.
        return [
            line.decode("utf-8", "replace").rstrip("\r").rsplit("\r", 1)[-1] for line in complete
        ], skipped


def _bounded(partial: bytes) -> bytes:
    """A line without its end yet, kept to `OPEN_LINE_LIMIT`: what follows its last \\r (the bar a
    terminal shows now), else its beginning."""
    if len(partial) <= OPEN_LINE_LIMIT:
        return partial
    redrawn = partial.rfind(b"\r")
    if redrawn >= 0 and len(partial) - redrawn - 1 <= OPEN_LINE_LIMIT:
        return partial[redrawn + 1 :]
    return partial[:OPEN_LINE_LIMIT]


class MetricsReader:
    """The events of metrics.jsonl. A `begin` (resume) drops points logged after its step."""

    def __init__(self, path: Path) -> None:
        self._reader = AppendReader(path)
        self.points: list[LogPoint] = []
        self.evals: list[tuple[int, float]] = []
        self.max_steps: int | None = None
        self.world_size: int | None = None
        self.begin_step = 0
        self.ended: dict | None = None
        self.summary: dict | None = None
        self.last_checkpoint: str | None = None

    def poll(self) -> bool:
        lines, _ = self._reader.read_lines()
        changed = False
        for line in lines:
            if (event := event_of(line)) is not None:
                self._apply(event)
                changed = True
        return changed

    def _apply(self, event: dict) -> None:
        kind = event.get("event")
        step = int(event.get("step") or 0)
        if isinstance(event.get("max_steps"), int):
            self.max_steps = event["max_steps"]
        if kind == "begin":
            self.begin_step = step
            self.points = [p for p in self.points if p.step <= step]
            self.evals = [e for e in self.evals if e[0] <= step]
            self.world_size = event.get("world_size")
            self.ended = None
        elif kind == "log":
            self.points.append(
                LogPoint(
                    step=step,
                    time=float(event.get("time") or 0.0),
                    loss=number(event.get("loss")),
                    learning_rate=number(event.get("learning_rate")),
                    grad_norm=number(event.get("grad_norm")),
                    samples_per_s=number(event.get("samples_per_s")),
                    tokens_per_s=number(event.get("tokens_per_s")),
                    memory_mib=number(event.get("memory_mib")),
                    graph_compilations=event.get("graph_compilations"),
                )
            )
        elif kind == "eval" and number(event.get("eval_loss")) is not None:
            self.evals.append((step, float(event["eval_loss"])))
        elif kind == "save":
            self.last_checkpoint = event.get("checkpoint")
        elif kind == "summary":
            self.summary = event
        elif kind == "end":
            self.ended = event

    @property
    def step(self) -> int:
        if self.ended is not None:
            return int(self.ended.get("step") or 0)
        return self.points[-1].step if self.points else self.begin_step

    def seconds_per_step(self) -> float | None:
        """From the latest points of the current attempt (after its `begin`)."""
        recent = [p for p in self.points if p.step > self.begin_step][-ETA_WINDOW:]
        if len(recent) < 2 or recent[-1].step == recent[0].step:
            return None
        return (recent[-1].time - recent[0].time) / (recent[-1].step - recent[0].step)


class LogTail:
    """The last `max_lines` lines of a growing log, reading at most `max_bytes` per poll.

    A job printing 10,000 lines/s costs one bounded read per poll, whatever it prints.
    """

    def __init__(self, path: Path, max_lines: int = 1000, max_bytes: int = 256 * 1024) -> None:
        self._reader = AppendReader(path)
        self.lines: deque[str] = deque(maxlen=max_lines)
        self.max_bytes = max_bytes
        self.skipped_bytes = 0

    def poll(self) -> list[str]:
        """New lines since the last poll (at most `max_lines` of them)."""
        new, skipped = self._reader.read_lines(self.max_bytes)
        self.skipped_bytes += skipped
        new = new[-(self.lines.maxlen or len(new)) :]
        self.lines.extend(new)
        return new
