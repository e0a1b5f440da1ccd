"""Metrics read from a command's output: the same `metrics.jsonl` events the built-in job writes.

A command that runs without the panel's Trainer callback (or a run started by hand) prints its
metrics. `OutputMetrics` takes that output as it arrives, in chunks of any size, splits it into
terminal segments (a progress bar redraws itself with `\\r`, a log line ends with `\\n`) and hands
each segment to the readers of the chosen source. A segment is kept up to `lines.LIMIT` while its
end has not come; the rest of a longer one is not read (`on_cut` says so, once per segment):

- `trainer`: Trainer's printed log dicts (`trainer.py`), with the step from its progress bar, and
  the metrics block printed at the end (`summary.py`: GaudiTrainer's peak HBM is there);
- `json`: one JSON object per line (`jsonl.py`);
- `pattern`: a regular expression with named groups (`pattern.py`);
- `auto`: the Trainer dicts, the end block and JSON lines together.

Each metric becomes a `log`, `eval` or `summary` event with its step; a `begin` event comes before
the first one and `end()` gives the closing event. Nothing here imports torch or the UI.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Literal, Protocol

from gaudi_tui.core.jobs.readers import jsonl, pattern, summary, trainer
from gaudi_tui.core.jobs.readers.lines import Lines

Source = Literal["auto", "trainer", "json", "pattern"]
SOURCES: tuple[Source, ...] = ("auto", "trainer", "json", "pattern")
Event = dict[str, object]


class PatternError(ValueError):
    """The user's pattern does not compile or has no usable named group."""


class Reader(Protocol):
    def segment(self, text: str) -> list[Event]:
        """Events for one terminal segment (no `\\r` or `\\n` in it); `event` and the figures, plus
        `step` when the segment itself says which step it is."""
        ...

    def pending(self) -> list[Event]:
        """Events held back waiting for their step (the next progress bar), given up now."""
        ...


def readers_for(source: Source, user_pattern: str = "") -> list[Reader]:
    if source == "pattern":
        try:
            return [pattern.PatternReader(user_pattern)]
        except (re.error, ValueError) as exc:
            raise PatternError(f"metrics_pattern: {exc}") from None
    if source == "json":
        return [jsonl.JsonReader()]
    if source == "trainer":
        return [trainer.TrainerLogReader(json_lines=False), summary.SummaryReader()]
    return [trainer.TrainerLogReader(json_lines=True), summary.SummaryReader()]


def check_pattern(user_pattern: str) -> str | None:
    """Why this pattern cannot be used, or None."""
    try:
        pattern.PatternReader(user_pattern)
    except (re.error, ValueError) as exc:
        return str(exc)
    return None


class OutputMetrics:
    """Output in, events out. `begin_step` is where this attempt starts (its checkpoint's step)."""

    def __init__(
        self,
        source: Source = "auto",
        user_pattern: str = "",
        *,
        world_size: int = 1,
        device: str = "",
        resumed_from: str | None = None,
        begin_step: int = 0,
        clock: Callable[[], float] = time.time,
        on_cut: Callable[[str], None] | None = None,
    ) -> None:
        self.readers = readers_for(source, user_pattern)
        self.clock = clock
        self.lines = Lines("\r\n", on_cut=on_cut)
        self.step = begin_step
        self.begin_step = begin_step
        self.max_steps: int | None = None
        self.found = 0
        """How many metric events were found so far (0 = "no metrics found in the output")."""
        self._begun = False
        self._begin = {"world_size": world_size, "device": device, "resumed_from": resumed_from}
        self._counted = begin_step

    def feed(self, text: str) -> list[Event]:
        """Events for the complete segments of `text` (a trailing half-line waits for more)."""
        out: list[Event] = []
        for part in self.lines.feed(text):
            if part:
                for reader in self.readers:
                    for event in reader.segment(part):
                        self._place(event, out)
        return out

    def flush(self) -> list[Event]:
        """Everything still held: the half-line and metrics waiting for their step."""
        out: list[Event] = []
        if text := self.lines.take():
            for reader in self.readers:
                for event in reader.segment(text):
                    self._place(event, out)
        for reader in self.readers:
            for event in reader.pending():
                self._place(event, out)
        return out

    def settle(self) -> list[Event]:
        """When the output has gone quiet: read the progress bar being drawn now (it ends with the
        next redraw, which may be far off) so metrics held for their step come out. Only a bar is
        read here, and reading it twice changes nothing."""
        drawn = self.lines.peek()
        if "|" not in drawn:
            return []
        out: list[Event] = []
        for reader in self.readers:
            for event in reader.segment(drawn):
                if event.get("event") == "progress" or "step" in event:
                    self._place(event, out)
        return out

    def end(self, stopped: bool) -> Event:
        return {
            "event": "end",
            "time": self.clock(),
            "step": self.step,
            "max_steps": self.max_steps,
            "stopped": stopped,
        }

    def _place(self, event: Event, out: list[Event]) -> None:
        kind = event.get("event")
        if kind == "progress":  # a progress bar: where training is, not a metric
            self.step = int(event["step"])  # type: ignore[call-overload]  # readers put ints there
            if isinstance(event.get("max_steps"), int):
                self.max_steps = event["max_steps"]  # type: ignore[assignment]
            if not self._begun:
                out.append(self._begin_event())
            return
        if "step" in event:
            self.step = int(event["step"])  # type: ignore[call-overload]
        elif kind == "log":
            # No step anywhere (a loop printing only its loss): count the lines.
            self._counted = max(self._counted, self.step) + 1
            self.step = self._counted
        if isinstance(event.get("max_steps"), int):
            self.max_steps = event["max_steps"]  # type: ignore[assignment]
        if not self._begun:
            out.append(self._begin_event())
        self.found += 1
        out.append({**event, "time": self.clock(), "step": self.step, "max_steps": self.max_steps})

    def _begin_event(self) -> Event:
        self._begun = True
        return {
            "event": "begin",
            "time": self.clock(),
            "step": self.begin_step,
            "max_steps": self.max_steps,
            "source": "output",
            **self._begin,
        }
