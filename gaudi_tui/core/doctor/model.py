"""What a check is and what it reports."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from gaudi_tui.core.doctor.context import CheckContext

Status = Literal["ok", "warn", "fail", "skip"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "fail", "skip")
GLYPHS: dict[Status, str] = {"ok": "✓", "warn": "!", "fail": "✗", "skip": "–"}


@dataclass(frozen=True)
class CheckVerdict:
    """What a check function returns: a status, a one-line finding, why it matters, and the fix."""

    status: Status
    finding: str
    explanation: str = ""
    fix: str = ""
    env_fix: Mapping[str, str] = field(default_factory=dict)
    """Environment variables that fix the finding for jobs launched from the panel."""


def ok(finding: str, explanation: str = "", fix: str = "") -> CheckVerdict:
    return CheckVerdict("ok", finding, explanation, fix)


def warn(
    finding: str, explanation: str = "", fix: str = "", env_fix: Mapping[str, str] | None = None
) -> CheckVerdict:
    return CheckVerdict("warn", finding, explanation, fix, dict(env_fix or {}))


def fail(
    finding: str, explanation: str = "", fix: str = "", env_fix: Mapping[str, str] | None = None
) -> CheckVerdict:
    return CheckVerdict("fail", finding, explanation, fix, dict(env_fix or {}))


def skip(reason: str, explanation: str = "") -> CheckVerdict:
    return CheckVerdict("skip", reason, explanation)


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    run: Callable[[CheckContext], CheckVerdict]
    isolated: bool = False
    """True when the check runs a child process (habana_frameworks, is_torch_hpu_available)."""


@dataclass(frozen=True)
class CheckResult:
    id: str
    title: str
    status: Status
    finding: str
    explanation: str = ""
    fix: str = ""
    env_fix: Mapping[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @classmethod
    def of(cls, check: Check, outcome: CheckVerdict, seconds: float) -> CheckResult:
        return cls(
            check.id,
            check.title,
            outcome.status,
            outcome.finding,
            outcome.explanation,
            outcome.fix,
            dict(outcome.env_fix),
            seconds,
        )

    def to_json(self) -> dict[str, str]:
        """The `gaudi-tui check --json` item."""
        return {
            "id": self.id,
            "status": self.status,
            "finding": self.finding,
            "explanation": self.explanation,
            "fix": self.fix,
        }


def counts(results: Iterable[CheckResult]) -> dict[Status, int]:
    """How many results have each status, every status present."""
    seen = Counter(r.status for r in results)
    return {status: seen.get(status, 0) for status in STATUSES}


def env_fixes(results: Iterable[CheckResult]) -> dict[str, str]:
    """The environment the findings ask for, merged in check order."""
    merged: dict[str, str] = {}
    for result in results:
        merged.update(result.env_fix)
    return merged
