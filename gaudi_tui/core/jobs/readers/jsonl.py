"""One JSON object per line (`{"step": 10, "loss": 2.3, "lr": 1e-4}`): numbers are kept by name."""

from __future__ import annotations

import json
import math

from gaudi_tui.core.jobs.readers.figures import event_of

Event = dict[str, object]


def figures_of(data: dict[str, object]) -> dict[str, float]:
    return {
        str(k): float(v)
        for k, v in data.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }


class JsonReader:
    def segment(self, text: str) -> list[Event]:
        body = text.strip()
        if not (body.startswith("{") and body.endswith("}")):
            return []
        try:
            data = json.loads(body)
        except ValueError:
            return []
        if not isinstance(data, dict):
            return []
        event = event_of(figures_of(data))
        return [event] if event is not None else []

    def pending(self) -> list[Event]:
        return []
