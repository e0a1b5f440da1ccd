"""The zone of the host a job ran on, as its `begin` event says it (`utc_offset_s`, written by the
Trainer callback and the wrapper): the Gaudi runtime stamps its metrics files in that host's local
time without an offset, and a panel on another host, or in another zone, would read them hours off.
A run from before the field was written has none: its stamps are read in the reader's own zone."""

from __future__ import annotations

import time
from datetime import timedelta, timezone
from pathlib import Path

from gaudi_tui.core.jobs.summary import event_of

HEAD_BYTES = 64 * 1024
"""The first `begin` is looked for in this much of metrics.jsonl's head."""
MAX_OFFSET_S = 26 * 3600
"""Zones run from UTC-12 to UTC+14: an offset past this is not one."""


def offset_here() -> int:
    """This host's offset from UTC now, in seconds east (for the `begin` event)."""
    return time.localtime().tm_gmtoff


def job_zone(metrics_path: Path) -> timezone | None:
    """The zone of the job's first `begin` event in `metrics_path`, None where it says none."""
    try:
        with metrics_path.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return None
    for line in head.split(b"\n")[:-1]:  # complete lines only
        event = event_of(line)
        if event is None or event.get("event") != "begin":
            continue
        offset = event.get("utc_offset_s")
        if isinstance(offset, int) and not isinstance(offset, bool) and abs(offset) <= MAX_OFFSET_S:
            return timezone(timedelta(seconds=offset))
        return None
    return None
