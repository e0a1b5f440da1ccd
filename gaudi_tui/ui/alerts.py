"""The panel's part in alerts, while it runs: it sends card alerts from the live Devices feed (the same
`CardWatcher` as `gaudi-tui watch`, through the same ledger, so the two never send one twice),
sends the alert of a job whose supervisor is gone (`core/alerts/lost.py`), follows the notifications
file (every alert, a job's from its supervisor too), toasts each new one,
rings its own terminal (the bell, OSC 9, OSC 777: written through Textual's driver, in order with
the frames) and keeps the list the `!` dialog shows. Alerts never depend on it: supervisors and
`gaudi-tui watch` send theirs whether the panel is open or not.

When it starts it says once, in a toast, what happened since the panel was last open
(`core/alerts/away.py`: jobs ended, alerts sent), and it moves the "last open" stamp then and when
the panel quits (`stop`)."""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import App
    from textual.notifications import SeverityLevel

    from gaudi_tui.core.alerts.config import AlertConfig
    from gaudi_tui.core.alerts.model import Alert
    from gaudi_tui.core.alerts.watcher import CardWatcher
    from gaudi_tui.core.devices.feed import MonitorUpdate

log = logging.getLogger(__name__)
POLL_S = 1.0
KEEP = 500
"""The list keeps the newest this many alerts."""
SEVERITY: dict[str, SeverityLevel] = {"info": "information", "warning": "warning", "critical": "error"}


class PanelAlerts:
    def __init__(self, app: App) -> None:
        self.app = app
        self.alerts: list[Alert] = []
        self.config: AlertConfig | None = None
        self.watcher: CardWatcher | None = None
        self.cancel = threading.Event()
        self.failing: set[str] = set()
        """The follower's steps that raised, each logged once until it reads again."""
        self.greeted = False
        """The "while you were away" line was said (or there was nothing to say)."""

    def start(self) -> None:
        threading.Thread(target=self._follow, name="alerts", daemon=True).start()

    def stop(self) -> None:
        """The panel quits: the follower ends and the stamp says it was open until now."""
        self.cancel.set()
        if self.greeted:
            from gaudi_tui.core.alerts.away import mark_open

            try:
                mark_open()
            except OSError:
                log.exception("cannot write the last-open stamp")

    def card_update(self, update: MonitorUpdate) -> None:
        """In the device feed's thread: send the card alerts of this update. A replay's cards are
        not this host's: the panel sends nothing for them (`gaudi-tui watch --replay` does, asked)."""
        if self.watcher is None or update.snapshot.source == "replay":
            return
        try:
            self.watcher.on_update(update)
        except Exception:  # an alert bug must not stop the Devices feed
            log.exception("card alerts failed")

    def _follow(self) -> None:
        from gaudi_tui.core.alerts import config
        from gaudi_tui.core.alerts.lost import LostJobs
        from gaudi_tui.core.alerts.store import NotificationReader
        from gaudi_tui.core.alerts.watcher import CardWatcher

        self.config, problems = config.load()
        self.watcher = CardWatcher(self.config)
        reader, lost = NotificationReader(), LostJobs(self.config)
        try:
            for problem in problems:  # as the panel's other settings: a toast naming the line
                self.app.call_from_thread(self.app.notify, problem, title="Settings: using the default",
                                          severity="warning", timeout=30, markup=False)  # fmt: skip
            self._greet()
            self.app.call_from_thread(self._add, self._guarded("the kept alerts", reader.history), False)
            while not self.cancel.wait(POLL_S):
                self._guarded("lost jobs", lost.poll)  # a lost job has no supervisor to send its alert
                if found := self._guarded("the notifications file", reader.poll):
                    self.app.call_from_thread(self._add, found, True)
        except RuntimeError:  # the app has exited
            return

    def _guarded(self, what: str, read: Callable[[], list[Alert]]) -> list[Alert]:
        """`read()`, or nothing when it raises: logged and toasted once while it keeps failing, and
        the follower goes on (a bug in one step must not end the panel's alerts)."""
        try:
            found = read()
        except Exception:
            if what not in self.failing:
                self.failing.add(what)
                log.exception("alerts: reading %s failed", what)
                self.app.call_from_thread(self.app.notify, f"Alerts: reading {what} failed; see the log",
                                          severity="error", timeout=30, markup=False)  # fmt: skip
            return []
        self.failing.discard(what)
        return found

    def _greet(self) -> None:
        """Once, at start: what happened while the panel was closed, in one line."""
        from gaudi_tui.core.alerts.away import since_last_open

        try:
            away = since_last_open()
        except Exception:  # the alerts follower goes on without the line
            log.exception("cannot tell what happened while the panel was closed")
            away = None
        if away is not None and (line := away.line()):
            severity: SeverityLevel = (
                "warning" if away.ended["failed"] or away.ended["lost"] else "information"
            )
            self.app.call_from_thread(self.app.notify, line, severity=severity, timeout=20, markup=False)
        self.greeted = True

    def _add(self, alerts: list[Alert], announce: bool) -> None:
        self.alerts = (self.alerts + alerts)[-KEEP:]
        if not announce:
            return
        for alert in alerts:
            severity = SEVERITY.get(alert.severity, "information")
            self.app.notify(alert.text, title=alert.title, severity=severity, timeout=15, markup=False)
            if self.config is not None and self.config.terminal:
                self._ring(alert)

    def _ring(self, alert: Alert) -> None:
        from gaudi_tui.core.alerts.sinks import escapes

        driver = self.app._driver  # the terminal's writer: escapes go out in order with the frames
        if driver is not None:
            driver.write(escapes(alert, bool(os.environ.get("TMUX"))))
