"""How a job attempt ended, read from what it left behind: its log and its metrics' `end` event.

Shared by every target (local processes, Ray) and by the training processes, which end a failure
with one line starting `ERROR_PREFIX`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from gaudi_tui.core.jobs.summary import CHUNK, event_of, lines_end

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
            for line in _lines_back(fh, since, lines_end(fh, os.fstat(fh.fileno()).st_size)):
                if (event := event_of(line)) is None:
                    continue
                if event.get("event") == "begin":
                    return None
                if event.get("event") == "end":
                    return event
    except OSError:
        return None
    return None


def _lines_back(fh: BinaryIO, since: int, end: int) -> Iterator[bytes]:
    """The complete lines between bytes `since` and `end`, the last first, read a chunk at a time
    (a file of any size, or a line of any length, is never held whole: the part of a line longer
    than a chunk is passed over, as no event is that long)."""
    position, carry = end, b""
    while position > since:
        start = max(since, position - CHUNK)
        fh.seek(start)
        data = fh.read(position - start) + carry
        position = start
        if position > since:
            carry, _, data = data.partition(b"\n")
            carry = carry if len(carry) <= CHUNK else b""
        yield from reversed(data.split(b"\n"))


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
