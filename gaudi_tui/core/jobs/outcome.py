"""How a job attempt ended, read from what it left behind: its log and its metrics' `end` event.

Shared by every target (local processes, Ray) and by the training processes, which end a failure
with one line starting `ERROR_PREFIX`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ERROR_PREFIX = "gaudi-tui job error: "
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Interrupt)\b:?.*")


def last_end_event(path: Path) -> dict | None:
    """The `end` event of the latest attempt in metrics.jsonl, or None if it has not ended."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "begin":
            return None
        if event.get("event") == "end":
            return event
    return None


def error_from_log(path: Path, tail_bytes: int = 65536) -> str | None:
    """The job's own error line if it printed one, else the last exception line of the log."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - tail_bytes))
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if ERROR_PREFIX in line:
            return line.split(ERROR_PREFIX, 1)[1].strip()
    for line in reversed(lines):
        text = line.strip()
        if _EXCEPTION_LINE.match(text) and ":" in text:
            return text[:500]
    return None
