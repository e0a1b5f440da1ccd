"""The card watcher and the terminal follower, shared by `gaudi-tui watch` and the panel.

`CardWatcher.on_update` takes the device feed's updates (`DeviceMonitor` or a replay) and sends
the card alerts (`cards.CardRules`) through the state folder's ledger, so the panel and a `watch`
running at once send each alert once. A replay has no holders of its own: a `HolderScanner` given
to the watcher finds them on this host. `TerminalFollower` reads the notifications file by offset
and puts each new alert (a job's from its supervisor, a card's from any watcher) on a terminal.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Mapping
from typing import TextIO

from gaudi_tui.core.alerts import sinks, store
from gaudi_tui.core.alerts.cards import CardRules
from gaudi_tui.core.alerts.config import AlertConfig
from gaudi_tui.core.alerts.deliver import dispatch
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.alerts.store import Ledger, NotificationReader
from gaudi_tui.core.devices.feed import MonitorUpdate
from gaudi_tui.core.devices.holders import HolderScanner

log = logging.getLogger(__name__)


def card_ledger(config: AlertConfig) -> Ledger:
    return Ledger(store.alerts_dir() / "sent", repeat_s=config.repeat_s)


class CardWatcher:
    def __init__(
        self, config: AlertConfig, scanner: HolderScanner | None = None, host: str | None = None
    ) -> None:
        self.config = config
        self.rules = CardRules(config, host or socket.gethostname())
        self.ledger = card_ledger(config)
        self.scanner = scanner
        self.failing = False
        """The last update raised (and was logged)."""

    def on_update(self, update: MonitorUpdate) -> list[Alert]:
        """The alerts this update sent (those not sent before). An update whose rules raise sends
        none, logged once while they keep raising: the feed (and `gaudi-tui watch`) goes on."""
        try:
            holders = tuple(self.scanner.scan()) if self.scanner is not None else update.holders
            found = self.rules.update(update.snapshot, holders, time.time())
            sent = [alert for alert in found if dispatch(alert, self.ledger, self.config)]
        except Exception:  # one bad reading must not end the card feed, nor `watch` with it
            if not self.failing:
                log.exception("card alerts: an update could not be checked (the next ones are)")
            self.failing = True
            return []
        self.failing = False
        return sent


def stamp(alert: Alert) -> str:
    return time.strftime("%H:%M:%S", time.localtime(alert.time))


class TerminalFollower:
    """New alerts in the notifications file, as a line each on `stream` with the bell and the
    desktop-notification escapes (unless `[alerts] terminal = false`, or `stream` is not a terminal:
    a file or a pipe gets the lines only)."""

    def __init__(self, config: AlertConfig, stream: TextIO, environ: Mapping[str, str] | None = None) -> None:
        self.config, self.stream, self.environ = config, stream, environ
        self.reader = NotificationReader()

    def poll(self) -> list[Alert]:
        alerts = self.reader.poll()
        for alert in alerts:
            if self.config.terminal and self.stream.isatty():
                sinks.to_terminal(alert, self.stream, self.environ)
            self.stream.write(f"[{stamp(alert)}] {alert.severity.upper()} {sinks.clean(alert.line(), 400)}\n")
            self.stream.flush()
        return alerts
