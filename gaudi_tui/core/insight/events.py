"""The panel's side: what a run's `compile` and `stall` events say, gathered from its metrics.jsonl
(the caller reads the file and hands each event here, oldest first)."""

from __future__ import annotations

from gaudi_tui.core.insight import compiles, profile, stalls
from gaudi_tui.core.insight.finding import Finding

WORDS = tuple(b'"' + kind.encode() + b'"' for kind in (compiles.EVENT, stalls.EVENT, profile.EVENT))
"""A line holding neither word is not one of these events (a first read skips it unparsed)."""


class WhySlow:
    def __init__(self) -> None:
        self.compiles = compiles.CompileFrames()
        self.stalls = stalls.Stalls()
        self.profile: dict | None = None
        """The newest `profile` event."""

    def apply(self, event: dict) -> None:
        kind = event.get("event")
        if kind == compiles.EVENT:
            self.compiles.apply(event)
        elif kind == stalls.EVENT:
            self.stalls.apply(event)
        elif kind == profile.EVENT:
            self.profile = event

    def seen(self) -> bool:
        return (
            self.compiles.seen
            or self.compiles.unavailable is not None
            or bool(self.stalls.ranks)
            or bool(self.profile)
        )

    def findings(self, warmup_end: int, hpu: bool) -> list[Finding]:
        found = compiles.findings(self.compiles, warmup_end, hpu)
        stall = stalls.finding(self.stalls)
        return found + ([stall] if stall is not None else [])

    def lines(self, hpu: bool) -> list[str]:
        out = self.compiles.lines()
        if out and hpu:
            out.append(
                "  (torch's compiles of its frames; Intel's runtime file counts the graphs hpu_backend "
                "compiles: two views of one cost, not added up)"
            )
        return out + self.stalls.lines() + (profile.lines(self.profile) if self.profile else [])

    def to_dict(self) -> dict[str, object]:
        return {
            "torch_compile": self.compiles.to_dict(),
            "input_stalls": self.stalls.to_dict(),
            "profile": self.profile,
        }
