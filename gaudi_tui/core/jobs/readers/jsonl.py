"""One JSON object per line (`{"step": 10, "loss": 2.3, "lr": 1e-4}`): numbers are kept by name."""

from __future__ import annotations

from gaudi_tui.core.jobs.readers.figures import event_of
from gaudi_tui.core.untrusted.data import Untrusted, loads, number

Event = dict[str, object]


def figures_of(data: dict[str, object]) -> dict[str, float]:
    """The finite numbers of `data` by name (untrusted.data.number: no bool, nothing past 64 bits)."""
    figures = {str(k): number(v) for k, v in data.items()}
    return {k: v for k, v in figures.items() if v is not None}


class JsonReader:
    def segment(self, text: str) -> list[Event]:
        body = text.strip()
        if not (body.startswith("{") and body.endswith("}")):
            return []
        try:  # the job's own output: NaN (a diverged loss) is no figure, deep nesting no line
            data = loads(body, what="a metrics line", nonfinite=True)
        except Untrusted:
            return []
        if not isinstance(data, dict):
            return []
        event = event_of(figures_of(data))
        return [event] if event is not None else []

    def pending(self) -> list[Event]:
        return []
