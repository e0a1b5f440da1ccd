"""A finding with its fix, as the Checklist gives them: plain values."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    id: str
    threshold: str
    text: str
    fix: str
    status: str = "warn"

    def to_dict(self) -> dict[str, str]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}
