"""What happened while the panel was closed: the jobs that ended (by how) and the alerts sent since
it was last open, said in one line when it opens again.

The panel keeps a stamp, `<state>/last-open.json` (`{"time": <seconds>}`, written atomically), when
it opens and when it quits. At the next open, `since_last_open` counts from that time:
- jobs: the run folders whose `status.json` was written since (a stat each; only those are read)
  and that have ended since (`succeeded`, `failed`, `stopped`, `cancelled` with their end time
  after the stamp), or are `lost` now (their supervisor was alive when it last wrote, after the
  stamp, and is gone);
- alerts: those in the notifications file (`store.py`) sent since, except `job_ended` (the jobs
  above are those). A job's alert names its run as its subject and its key starts with it; every
  other alert is a card's.

No stamp (the panel was never open here) means nothing to say.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from gaudi_tui.core import paths
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.alerts.store import NotificationReader
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.status import TERMINAL, effective_state
from gaudi_tui.core.untrusted import data
from gaudi_tui.core.untrusted.files import write_atomic

STAMP_NAME = "last-open.json"
NOT_OK = ("failed", "lost", "stopped", "cancelled")
"""The ways a job ends that the line names (the rest of the ended ones succeeded)."""


@dataclass(frozen=True)
class Away:
    """What happened since `since`."""

    since: float
    ended: Counter[str] = field(default_factory=Counter)
    """Jobs ended, by their state."""
    card_alerts: int = 0
    job_alerts: int = 0

    def line(self) -> str | None:
        """One line, e.g. `while you were away: 2 jobs ended (1 failed), 1 card alert — ! lists them`;
        None when nothing happened."""
        parts = []
        if jobs := sum(self.ended.values()):
            how = ", ".join(f"{self.ended[state]} {state}" for state in NOT_OK if self.ended[state])
            parts.append(_count(jobs, "job") + " ended" + (f" ({how})" if how else ""))
        if self.card_alerts:
            parts.append(_count(self.card_alerts, "card alert"))
        if self.job_alerts:
            parts.append(_count(self.job_alerts, "job alert"))
        if not parts:
            return None
        return "while you were away: " + ", ".join(parts) + " — ! lists them"


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def stamp_path() -> Path:
    return paths.state_dir() / STAMP_NAME


def last_open(path: Path | None = None) -> float | None:
    """When the panel was last open here, None if never (or the stamp is unreadable)."""
    try:
        raw = (path or stamp_path()).read_bytes()
        value = data.loads(raw, what=STAMP_NAME)
    except (OSError, data.Untrusted):
        return None
    return data.number(value.get("time"), lo=0.0) if isinstance(value, dict) else None


def mark_open(now: float | None = None, path: Path | None = None) -> None:
    """Stamp the panel as open at `now`."""
    write_atomic(path or stamp_path(), json.dumps({"time": time.time() if now is None else now}))


def is_job_alert(alert: Alert) -> bool:
    return alert.key.startswith(alert.subject + ":")


def count_since(since: float, now: float | None = None, notifications: Path | None = None) -> Away:
    """The jobs that ended and the alerts sent since `since`."""
    now = time.time() if now is None else now
    ended: Counter[str] = Counter()
    for run in runfolder.all_runs():
        try:
            if os.stat(run.status_path).st_mtime < since:
                continue
        except OSError:
            continue
        status = run.status()
        if status is None:
            continue
        state = effective_state(status, now)
        if state == "lost" or (state in TERMINAL and status.ended is not None and status.ended >= since):
            ended[state] += 1
    alerts = [
        a
        for a in NotificationReader(notifications, from_start=True).history()
        if a.time >= since and a.kind != "job_ended"
    ]
    jobs = sum(1 for a in alerts if is_job_alert(a))
    return Away(since, ended, card_alerts=len(alerts) - jobs, job_alerts=jobs)


def since_last_open(now: float | None = None) -> Away | None:
    """What happened since the panel was last open (None if it never was), and the stamp moved to now."""
    now = time.time() if now is None else now
    since = last_open()
    away = count_since(since, now) if since is not None else None
    mark_open(now)
    return away
