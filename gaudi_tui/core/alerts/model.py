"""One alert, as the notifications file keeps it (one JSON object a line)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Literal

Severity = Literal["info", "warning", "critical"]
KINDS = (
    "job_ended", "job_stalled", "compiling", "compile_limit", "torch_recompiling", "input_stall",
    "idle_held", "hbm_full", "port_down", "ecc_rising",
)  # fmt: skip
"""Every kind of alert; `[alerts] off = [...]` in config.toml turns some off."""


@dataclass(frozen=True)
class Alert:
    kind: str
    severity: Severity
    subject: str
    """What it is about: a run id, or `host card N`."""
    title: str
    text: str
    key: str
    """Stable for one occurrence: the ledger sends an alert with a key once (`store.Ledger`)."""
    time: float = field(default_factory=time.time)

    def line(self) -> str:
        """One line for a terminal or a log: `title: text`."""
        return f"{self.title}: {self.text}" if self.text else self.title

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> Alert | None:
        """The alert of one line, None for a line that is not one (a half-written or foreign line)."""
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        try:
            alert = cls(**{k: data[k] for k in cls.__dataclass_fields__})
        except (KeyError, TypeError):
            return None
        fields = (alert.kind, alert.severity, alert.subject, alert.title, alert.text, alert.key)
        if not all(isinstance(v, str) for v in fields) or not isinstance(alert.time, int | float):
            return None
        return alert
