"""The alert for a lost job. Its supervisor is gone (OOM-killed, `kill -9`, a reboot), so no
supervisor is left to send it: `gaudi-tui watch` and the panel look for such jobs (`LostJobs.poll`).

The alert goes through the run's own ledger (`<run>/alerts/`, the one its supervisors use), keyed by
run and attempt. So the panel and a `watch` running together send it once, a restart does not send
it again, and a re-attached supervisor still sends the attempt's end. A job counts as lost only after
its status.json was read again (`jobs/liveness.py`), so a job that just ended is not reported lost.
A run whose folder has seen no write for `RECENT_S` was lost long before anyone looked: it is passed
over, so the first start of a panel does not report every old run that was ever lost.

One run folder that cannot be read is logged once, by its name, and the others are still looked at.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from gaudi_tui.core.alerts.config import AlertConfig
from gaudi_tui.core.alerts.deliver import dispatch
from gaudi_tui.core.alerts.jobs import ENDED, duration
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.alerts.store import Ledger
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs import status as status_mod
from gaudi_tui.core.jobs.liveness import current
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import SpecError
from gaudi_tui.core.jobs.status import ACTIVE, JobStatus

log = logging.getLogger(__name__)
RECENT_S = 24 * 3600.0
"""A lost run whose folder was last written longer ago than this is not reported."""
LOST_WORDS = "the supervisor is gone (machine rebooted or process killed)"
EVERY_S = 5.0
"""The runs folder is looked at no more often than this."""


class LostJobs:
    """Finds the runs whose supervisor is gone and sends each attempt's `Job lost` alert once."""

    def __init__(self, config: AlertConfig, every_s: float = EVERY_S) -> None:
        self.config, self.every_s = config, every_s
        self._next = 0.0
        self._quiet: dict[str, int] = {}
        """Run folders with nothing to report, by the status.json stamp they were judged at."""
        self._failed: set[str] = set()
        """Run folders whose error was logged already."""

    def poll(self, now: float | None = None) -> list[Alert]:
        """The alerts sent now (those no one sent before); nothing until `every_s` since the last look."""
        if time.monotonic() < self._next:
            return []
        self._next = time.monotonic() + self.every_s
        now = time.time() if now is None else now
        try:
            entries = [e for e in os.scandir(runfolder.runs_dir()) if e.is_dir()]
        except OSError as exc:
            log.warning("lost jobs: cannot list the runs folder: %s", exc)
            return []
        sent = []
        for entry in entries:
            try:
                alert = self._check(RunFolder(Path(entry.path)), now)
                if alert is not None and dispatch(alert, Ledger(Path(entry.path) / "alerts"), self.config):
                    sent.append(alert)
            except Exception:  # one unreadable run folder must not stop the others' alerts
                if entry.name not in self._failed:
                    self._failed.add(entry.name)
                    log.exception("lost jobs: cannot read run %s", entry.name)
        return sent

    def _check(self, run: RunFolder, now: float) -> Alert | None:
        try:
            stamp = os.stat(run.status_path).st_mtime_ns
        except FileNotFoundError:
            return None
        if self._quiet.get(run.id) == stamp:
            return None
        status = status_mod.read(run.status_path)
        if status is None:
            return None
        status, state = current(run.status_path, status, now)
        if state != "lost":
            if status.state not in ACTIVE:
                self._quiet[run.id] = stamp
            return None
        self._quiet[run.id] = stamp  # lost: judged once, whatever happens with its alert
        if now - last_written(run) > RECENT_S:
            return None
        return lost_alert(run, status, now)


def last_written(run: RunFolder) -> float:
    """When the job last wrote into its folder: its status, metrics or log."""
    stamps = []
    for path in (run.status_path, run.metrics_path, run.log_path):
        try:
            stamps.append(os.stat(path).st_mtime)
        except OSError:
            continue
    return max(stamps, default=0.0)


def lost_alert(run: RunFolder, status: JobStatus, now: float) -> Alert:
    try:
        name = run.row_spec().name
    except SpecError:
        name = run.id
    words = [f"{name} ({run.id})"]
    if status.started is not None:
        words.append(f"after {duration(status.elapsed(now))}")
    words.append(f"— {LOST_WORDS}")
    severity, title = ENDED["lost"]
    return Alert("job_ended", severity, run.id, title, " ".join(words), f"{run.id}:lost:{status.attempt}")
