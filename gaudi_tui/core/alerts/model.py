"""One alert, as the notifications file keeps it (one JSON object a line)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Literal

from gaudi_tui.core.untrusted.data import Untrusted, loads

Severity = Literal["info", "warning", "critical"]
KINDS = (
    "job_ended", "job_stalled", "compiling", "compile_limit", "torch_recompiling", "input_stall",
    "idle_held", "hbm_full", "port_down", "ecc_rising",
)  # fmt: skip
"""Every kind of alert; `[alerts] off = [...]` in config.toml turns some off."""
TEXT_FIELDS = ("kind", "severity", "subject", "title", "text", "key")


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

    def __post_init__(self) -> None:
        """Its words as text: a process or a run folder whose name is not UTF-8 reaches Python as
        lone surrogates, which the notifications file, the delivery child's stdin, the `command`
        sink's environment and a webhook's JSON cannot carry (each raised or sent `\\udcff`)."""
        for name in TEXT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, value.encode("utf-8", "replace").decode("utf-8"))

    def line(self) -> str:
        """One line for a terminal or a log: `title: text`."""
        return f"{self.title}: {self.text}" if self.text else self.title

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> Alert | None:
        """The alert of one line, None for a line that is not one (a half-written or foreign line)."""
        try:  # another process wrote it: finite, 64-bit, bounded nesting, text (untrusted.data)
            data = loads(text, what="an alert")
        except Untrusted:
            return None
        if not isinstance(data, dict):
            return None
        try:
            alert = cls(**{k: data[k] for k in cls.__dataclass_fields__})
        except (KeyError, TypeError):
            return None
        if not all(isinstance(getattr(alert, name), str) for name in TEXT_FIELDS) or not isinstance(
            alert.time, int | float
        ):
            return None
        return alert
