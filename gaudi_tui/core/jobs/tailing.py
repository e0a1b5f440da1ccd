"""Reading files a job only appends to: their new complete lines (`AppendReader`), the events of
metrics.jsonl (`MetricsReader`) and a bounded tail of a log (`LogTail`). Each keeps a byte offset and
reads only what was appended; a half-written last line waits for the next read."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path

from gaudi_tui.core.jobs.summary import ETA_WINDOW, event_of
from gaudi_tui.core.untrusted.data import number
from gaudi_tui.core.untrusted.files import AppendReader

SLICE_BYTES = 1 << 20
"""The most of metrics.jsonl read at once."""


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
        self.skipped = 0
        """Lines that were not events a reader can hold (`summary.event_of`), passed over."""

    def poll(self) -> bool:
        """Apply what was appended, read a slice at a time (a 100 MiB line is never held whole: its
        first OPEN_LINE_LIMIT bytes are, and it is then skipped and counted)."""
        changed = False
        while True:
            lines, _ = self._reader.read_lines(at_most=SLICE_BYTES)
            for line in lines:
                if (event := event_of(line)) is not None:
                    self._apply(event)
                    changed = True
                elif line.strip():
                    self.skipped += 1
            if not self._reader.behind:
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
