"""Trainer's printed log dicts, with the step from its progress bar.

`ProgressCallback.on_log` writes `str(logs)` through `tqdm.write`: raw floats in transformers 4.x
(`{'loss': 2.3456, 'learning_rate': 4.5e-05, 'epoch': 0.1}`), each float formatted `.4g` as a string
in 5.x (`{'loss': '2.345', ...}`); `PrinterCallback` prints the same dict when tqdm is off. The dict
has no step. `tqdm.write` redraws the bars right after the dict, and the bar was advanced to the
step before the log was written, so the first training-bar draw after a dict holds its step: a dict
is held until then. Bars of another total (evaluation's) are not the training bar. Without any bar,
dicts are counted (the step is then the count of logs, not Trainer's step).
"""

from __future__ import annotations

import re

from gaudi_tui.core.jobs.readers.figures import event_of, number
from gaudi_tui.core.untrusted.data import Untrusted, loads

_BAR = re.compile(r"^\s*\d+%\|[^|]*\|\s*(\d{1,18})/(\d{1,18})\s*\[")
"""A tqdm bar's `n/total`; a count of 19 digits or more (past 64 bits, or int()'s 4300) is no bar."""
"""A bar without a description: Trainer's (and evaluation's); `Loading weights: 50%|…` is not."""
_PAIR = re.compile(r"'([^']+)':\s*(?:'([^']*)'|([^,}]+))")
Event = dict[str, object]


def parse_dict(text: str) -> dict[str, float] | None:
    """The figures of a printed Python dict of numbers (4.x floats or 5.x strings)."""
    figures: dict[str, float] = {}
    for match in _PAIR.finditer(text):
        key, quoted, bare = match.groups()
        value = number(quoted if quoted is not None else bare)
        if value is not None:
            figures[key] = value
    return figures or None


class TrainerLogReader:
    def __init__(self, json_lines: bool = True) -> None:
        self.json_lines = json_lines
        self.total: int | None = None
        self.held: list[Event] = []
        self.step: int | None = None

    def segment(self, text: str) -> list[Event]:
        if "|" in text and (bar := _BAR.match(text)) is not None:
            return self._bar(int(bar.group(1)), int(bar.group(2)))
        body = text.strip()
        if not (body.startswith("{") and body.endswith("}")):
            return []
        event = self._dict(body)
        if event is None:
            return []
        if "step" in event or self.total is None:
            return [event]  # a JSON line with its own step, or no bar to wait for
        released = self.pending()
        self.held.append(event)
        return released

    def _dict(self, body: str) -> Event | None:
        if body.startswith("{'"):
            figures = parse_dict(body)
            return event_of(figures) if figures else None
        if self.json_lines and body.startswith('{"'):
            from gaudi_tui.core.jobs.readers.jsonl import figures_of

            try:
                data = loads(body, what="a metrics line", nonfinite=True)
            except Untrusted:
                return None
            return event_of(figures_of(data)) if isinstance(data, dict) else None
        return None

    def _bar(self, n: int, total: int) -> list[Event]:
        if self.total is None:
            self.total = total
        elif total != self.total:
            return []  # evaluation's bar
        self.step = n
        out = [{**e, "step": n} for e in self.held]
        self.held = []
        out.append({"event": "progress", "step": n, "max_steps": total})
        return out

    def pending(self) -> list[Event]:
        out = [{**e, "step": self.step} if self.step is not None else e for e in self.held]
        self.held = []
        return out
