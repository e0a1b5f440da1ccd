"""How a job attempt ended, read from what it left behind: its log and its metrics' `end` event.

Shared by every target (local processes, Ray) and by the training processes, which end a failure
with one line starting `ERROR_PREFIX`.
"""

from __future__ import annotations

import re
from pathlib import Path

from gaudi_tui.core.jobs.summary import event_of

ERROR_PREFIX = "gaudi-tui job error: "
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Interrupt)\b:?.*")
_WRAPPER = re.compile(
    r"^(?:[\w.]*\.)?(?:ControllerError|TrainingFailedError|WorkerGroupError|RayTaskError\w*|RayActorError)\b"
    r"|:\s*$"
)
"""Ray's exceptions that wrap the real one (its text comes further down), or any line that ends
with a colon (what follows it is the cause)."""


def cause_line(text: str) -> str:
    """The first line of an error, or, when that line only wraps another error (Ray's
    `ControllerError: Training failed due to controller error:`), the innermost error line below."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    if not _WRAPPER.search(lines[0]):
        return lines[0]
    for line in reversed(lines[1:]):
        if _EXCEPTION_LINE.match(line) and ":" in line and not _WRAPPER.search(line):
            return line
    return lines[0]


def last_end_event(path: Path, since: int = 0) -> dict | None:
    """The `end` event of the attempt whose events begin at byte `since` of metrics.jsonl (its
    size when the attempt began), or None if that attempt has not ended: an earlier attempt's end
    (a stop before a resume) is never this one's."""
    try:
        with path.open("rb") as fh:
            fh.seek(since)
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if (event := event_of(line)) is None:
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
    exceptions = [t for t in (line.strip() for line in lines) if _EXCEPTION_LINE.match(t) and ":" in t]
    causes = [t for t in exceptions if not _WRAPPER.search(t)]
    for line in reversed(lines):
        if ERROR_PREFIX in line:
            own = line.split(ERROR_PREFIX, 1)[1].strip()
            # a job that printed only Ray's wrapper: its cause is the last real error of the log
            return causes[-1][:500] if _WRAPPER.search(own) and causes else own
    if causes:
        return causes[-1][:500]
    return exceptions[-1][:500] if exceptions else None
