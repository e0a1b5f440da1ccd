"""A pattern the user gives, with named groups: `step (?P<step>\\d+) loss (?P<loss>[\\d.]+)`.

Every named group that matched a number becomes a figure of that name (`lr` is `learning_rate`,
`val_loss` is `eval_loss`, as in JSON lines); `step` and `max_steps` are whole numbers.
"""

from __future__ import annotations

import re

from gaudi_tui.core.jobs.readers.figures import event_of, number

Event = dict[str, object]


class PatternReader:
    def __init__(self, pattern: str) -> None:
        if not pattern.strip():
            raise ValueError("give a regular expression with named groups, e.g. loss=(?P<loss>[0-9.]+)")
        self.regex = re.compile(pattern)
        if not self.regex.groupindex:
            raise ValueError(f"{pattern!r} has no named group: write (?P<loss>[0-9.]+) for a figure")

    def segment(self, text: str) -> list[Event]:
        match = self.regex.search(text)
        if match is None:
            return []
        figures: dict[str, float] = {}
        for name, raw in match.groupdict().items():
            value = number(raw) if raw is not None else None
            if value is not None:
                figures[name] = value
        event = event_of(figures)
        return [event] if event is not None else []

    def pending(self) -> list[Event]:
        return []
