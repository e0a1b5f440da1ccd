"""Explain an error: match pasted text or a job's log against known Gaudi error strings.

The knowledge base is `knowledge.toml` in this package; each entry has a pattern, cause, fix,
source and the id of the check that finds the cause before a job hits it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FIELDS = ("id", "title", "pattern", "cause", "fix", "source", "check")
LOG_TAIL_BYTES = 4 << 20


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    pattern: re.Pattern[str]
    cause: str
    fix: str
    source: str
    check: str


@dataclass(frozen=True)
class Match:
    entry: Entry
    line_number: int
    """1-based line of the first occurrence."""
    line: str
    count: int

    def to_json(self) -> dict[str, object]:
        e = self.entry
        return {
            "id": e.id,
            "title": e.title,
            "line": self.line_number,
            "text": self.line,
            "count": self.count,
            "cause": e.cause,
            "fix": e.fix,
            "source": e.source,
            "check": e.check,
        }


def parse(text: str) -> tuple[Entry, ...]:
    """Entries from TOML text; ValueError naming the entry when one is incomplete or its pattern is invalid."""
    entries: list[Entry] = []
    for number, raw in enumerate(tomllib.loads(text).get("entry", []), start=1):
        missing = [f for f in FIELDS if not isinstance(raw.get(f), str) or not raw[f].strip()]
        if missing:
            raise ValueError(
                f"knowledge base entry {number} ({raw.get('id', '?')}) lacks {', '.join(missing)}"
            )
        try:
            pattern = re.compile(raw["pattern"], re.IGNORECASE | re.MULTILINE)
        except re.error as exc:
            raise ValueError(f"knowledge base entry {raw['id']}: bad pattern: {exc}") from exc
        entries.append(Entry(**{**{f: raw[f].strip() for f in FIELDS}, "pattern": pattern}))
    return tuple(entries)


def load() -> tuple[Entry, ...]:
    return parse(resources.files(__package__).joinpath("knowledge.toml").read_text(encoding="utf-8"))


def explain(text: str, entries: tuple[Entry, ...] | None = None) -> list[Match]:
    """Every entry that matches, in the order of its first occurrence in the text."""
    found: list[Match] = []
    for entry in load() if entries is None else entries:
        hits = list(entry.pattern.finditer(text))
        if not hits:
            continue
        start = hits[0].start()
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", start)
        line = text[line_start : line_end if line_end >= 0 else len(text)].strip()
        found.append(Match(entry, text.count("\n", 0, start) + 1, line, len(hits)))
    return sorted(found, key=lambda m: (m.line_number, m.entry.id))


def read_log_tail(path: Path, limit: int = LOG_TAIL_BYTES) -> str:
    """The last `limit` bytes of a log, decoded leniently (logs hold progress bars and stray bytes)."""
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        handle.seek(max(size - limit, 0))
        return handle.read().decode("utf-8", errors="replace")


def job_logs(runs_dir: Path) -> list[Path]:
    """The `stdout.log` of each run folder under `runs_dir`, newest first."""
    logs = [p for p in runs_dir.glob("*/stdout.log") if p.is_file()]
    return sorted(logs, key=lambda p: (p.stat().st_mtime, p.parent.name), reverse=True)
