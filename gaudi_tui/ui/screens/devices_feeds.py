"""The Devices screen's feed wiring: the threads that read the cards and the host, and what their
messages change.

A thread runs the device feed (`core.devices.monitor.DeviceMonitor`: HLML, one long-lived hl-smi
child, NVML or host only) and posts each refresh as a message; a second thread posts the host
figures on their own timer, so the host row stays live whatever the device source does; a third,
started after the first frame, reads the slow details every 30 s while the screen is shown
(`core.devices.details`: one-shot `hl-smi -n link`/`-n ports` per card, or HLML's port masks, and
hl-smi's process table). `FeedScreen` keeps the latest of each; the Devices screen draws them.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from textual.message import Message

from gaudi_tui.core.devices.feed import MonitorConfig
from gaudi_tui.core.devices.history import History
from gaudi_tui.ui.screens.base import PanelScreen

if TYPE_CHECKING:
    from gaudi_tui.core.devices.card_processes import ProcessMerge
    from gaudi_tui.core.devices.details import CardDetails
    from gaudi_tui.core.devices.early_query import EarlyQuery
    from gaudi_tui.core.devices.feed import MonitorUpdate
    from gaudi_tui.core.devices.model import CardLinks, Device, DeviceSnapshot
    from gaudi_tui.core.devices.sources.host import HostStats
    from gaudi_tui.core.devices.usage import CardUse

log = logging.getLogger(__name__)


class Feed(Protocol):
    def run(self) -> None: ...


FeedFactory = Callable[[Callable[["MonitorUpdate"], object], threading.Event], Feed]
DetailsFactory = Callable[
    [Callable[[], list["Device"]], Callable[["CardDetails"], object], threading.Event, Callable[[], object]],
    Feed,
]
"""(the feed's cards now, on_details, cancel, the initialised pyhlml or None) → the details reader."""
HostReading = Callable[[], "HostStats | None"]


class DevicesUpdated(Message, bubble=False):
    """A refresh of the device feed. For this screen only: it does not bubble (the app would look
    for a handler in each of its classes, once a second)."""

    def __init__(self, update: MonitorUpdate) -> None:
        super().__init__()
        self.update = update


class HostUpdated(Message, bubble=False):
    """New host figures; for this screen only, as `DevicesUpdated`."""

    def __init__(self, stats: HostStats) -> None:
        super().__init__()
        self.stats = stats


class DetailsRead(Message, bubble=False):
    """A round of the details reader; for this screen only, as `DevicesUpdated`."""

    def __init__(self, details: CardDetails) -> None:
        super().__init__()
        self.details = details


class FeedScreen(PanelScreen):
    """A screen fed by the device feed, the host timer and the details reader; `_redraw` draws."""

    def __init__(
        self,
        config: MonitorConfig | Callable[[], MonitorConfig] | None = None,
        feed: FeedFactory | None = None,
        host_reader: HostReading | None = None,
        details: DetailsFactory | None = None,
    ) -> None:
        """`config` may be a function, called when the feed starts (after the first frame: the app
        reads the refresh setting then). `feed`, `host_reader` and `details` replace the device
        monitor, the psutil reader and the links/process-table reader (tests)."""
        super().__init__()
        self.make_details: DetailsFactory = details or self._details_poller
        self.details: CardDetails | None = None
        self._details_cancel = threading.Event()
        self._config_later = config if callable(config) else None
        self.config = config if isinstance(config, MonitorConfig) else MonitorConfig()
        self.make_feed: FeedFactory = feed or self._device_monitor
        self.host_reader = host_reader
        self.host: HostStats | None = None
        self._latest_at = float("-inf")
        self._host_cancel = threading.Event()
        self._host_shown = threading.Event()
        """Set while this screen is shown: the host row is read only then (and at once when shown)."""
        self._host_shown.set()
        self.history = History(seconds=300, interval=self.config.interval)
        self.latest: MonitorUpdate | None = None
        self._uses: dict[int, CardUse] = {}
        self._uses_of: MonitorUpdate | None = None
        self._feed: Feed | None = None
        self._merge: ProcessMerge | None = None
        self._details_reader: Feed | None = None
        self._details_shown = True
        self._feed_cancel: threading.Event | None = None
        self._feed_thread: threading.Thread | None = None
        self._early: EarlyQuery | None = None
        """The CLI's first hl-smi query (the app's, read as the feeds start): the first feed reads it."""

    def _redraw(self) -> None:
        """Draw the latest update (the Devices screen's map)."""
        raise NotImplementedError

    def _start_feeds(self) -> None:
        """After the first frame: the settings are read, then the device feed and the host row start
        (the details reader once the first update is drawn: `_start_details`)."""
        if self._config_later is not None:
            self.config = self._config_later()
            self.history = History(seconds=300, interval=self.config.interval)
        self._early = self.app.early_query
        self.start_feed()
        threading.Thread(target=self._tick_host, name="host row", daemon=True).start()

    def _start_details(self) -> None:
        """Once the first update is drawn: the details reader (links and processes, every 30 s)."""
        threading.Thread(target=self._run_details, name="card details", daemon=True).start()

    @property
    def snapshot(self) -> DeviceSnapshot:
        if self.latest:
            return self.latest.snapshot
        from gaudi_tui.core.devices.model import DeviceSnapshot

        return DeviceSnapshot(source="none")

    # -- the host row ----------------------------------------------------------------------------
    def _tick_host(self) -> None:
        from gaudi_tui.core.devices.sources.host import tick_host

        def post(stats: HostStats) -> None:
            self.post_message(HostUpdated(stats))

        tick_host(post, self._host_cancel, self.config.interval, self.host_reader, self._host_shown)

    # -- the details reader ------------------------------------------------------------------------
    def _live_devices(self) -> list[Device]:
        """The cards the details reader asks about: only a live hl-smi or HLML feed's (a replay's
        or a saved output's links come with its snapshot)."""
        snapshot = self.snapshot
        return list(snapshot.devices) if snapshot.source in ("hl-smi", "hlml") else []

    def _hlml(self) -> object:
        """The pyhlml the feed initialised, when it reads HLML (never imported here)."""
        return sys.modules.get("pyhlml") if self.snapshot.source == "hlml" else None

    def _details_poller(
        self,
        devices: Callable[[], list[Device]],
        on_details: Callable[[CardDetails], object],
        cancel: threading.Event,
        hlml: Callable[[], object],
    ) -> Feed:
        from gaudi_tui.core.devices.details import DetailsPoller

        return DetailsPoller(devices, on_details, cancel, executable=self.config.hl_smi, hlml=hlml)

    def _run_details(self) -> None:
        try:
            reader = self.make_details(
                self._live_devices,
                lambda d: self.post_message(DetailsRead(d)),
                self._details_cancel,
                self._hlml,
            )
            if not self._details_cancel.is_set():
                self._details_reader = reader
                if not self._details_shown:  # the screen was left before the reader was made
                    self._show_details_reader(False)
                reader.run()
        except Exception:  # a reader bug must not take the panel down; links just stay unknown
            log.exception("card details reader failed")

    def on_details_read(self, message: DetailsRead) -> None:
        self.details = message.details
        if self.latest is not None:
            self._uses_of = None
            if self.is_current:
                self._redraw()

    def _show_details_reader(self, shown: bool) -> None:
        """The details reader reads only while this screen is shown (`DetailsPoller.hide`)."""
        self._details_shown = shown
        method = getattr(self._details_reader, "show" if shown else "hide", None)
        if method is not None:
            method()

    @property
    def card_links(self) -> tuple[CardLinks, ...]:
        """A replay's or saved output's own links, else what the details reader found."""
        if self.snapshot.links or self.details is None:
            return self.snapshot.links
        return self.details.links

    @property
    def link_errors(self) -> tuple[str, ...]:
        if self.snapshot.links or self.details is None:
            return self.snapshot.link_errors
        return self.details.link_errors

    # -- the device feed ---------------------------------------------------------------------------
    def _card_uses(self, update: MonitorUpdate) -> dict[int, CardUse]:
        from gaudi_tui.core.devices.usage import card_uses

        return card_uses(self._with_processes(update), update.holders)

    def _with_processes(self, update: MonitorUpdate) -> DeviceSnapshot:
        """The snapshot with every process on each card: hl-smi's table (the details reader's, or a
        replay's own) merged with the /proc holders."""
        from dataclasses import replace

        from gaudi_tui.core.devices.card_processes import ProcessMerge

        if self._merge is None:
            self._merge = ProcessMerge()
        merge_processes = self._merge
        snapshot = update.snapshot
        if snapshot.source in ("hl-smi", "hlml"):
            if self.details is not None and self.details.table is not None:
                table = self.details.table
            else:  # not read yet: what the feed has that the holders are not (the monitor: nothing)
                held = {(h.index, h.pid) for h in update.holders}
                table = tuple(p for p in snapshot.processes if (p.index, p.pid) not in held)
            merged = merge_processes(table, update.holders, self.config.proc_root)
        else:  # a replay or a saved output: the PIDs are another host's, /proc is not asked
            merged = merge_processes(snapshot.processes, update.holders, None)
        return replace(snapshot, processes=merged)

    def _device_monitor(self, on_update: Callable[[MonitorUpdate], object], cancel: threading.Event) -> Feed:
        """The real feed; built in the feed thread, so the sources and parsers load there. The host
        row has its own timer here, so the monitor does not read it."""
        from gaudi_tui.core.devices.monitor import DeviceMonitor

        early, self._early = self._early, None  # the first feed's only: a restarted one asks anew
        return DeviceMonitor(self.config, on_update, cancel, host_reader=_no_host, early=early)

    def start_feed(self) -> None:
        """Start (or restart) the feed in its own thread. Not a Textual worker: it runs for the
        screen's whole life, and workers are for jobs that finish (the app waits for those)."""
        self._stop_feed()
        cancel = threading.Event()
        alerts = getattr(self.app, "card_update", None)  # the panel's card alerts (ui/alerts.py)
        thread = threading.Thread(
            target=self._run_feed, args=(cancel, alerts), name="device feed", daemon=True
        )
        self._feed_cancel, self._feed_thread = cancel, thread
        thread.start()

    def _run_feed(self, cancel: threading.Event, alerts: Callable[[MonitorUpdate], None] | None) -> None:
        def on_update(update: MonitorUpdate) -> None:
            self.post_message(DevicesUpdated(update))
            if alerts is not None:
                alerts(update)

        try:
            feed = self.make_feed(on_update, cancel)
            if not cancel.is_set():
                self._feed = feed
                feed.run()
        except Exception:  # a feed bug must not take the panel down; the map just stops updating
            log.exception("device feed failed")

    def _stop_feed(self, wait: float = 0.0) -> None:
        """Cancel the feed; with `wait`, give it that long to end its hl-smi child."""
        if self._feed_cancel is not None:
            self._feed_cancel.set()
        if wait and self._feed_thread is not None:
            self._feed_thread.join(wait)

    def on_devices_updated(self, message: DevicesUpdated) -> None:
        """Each update joins the history; while the screen is hidden, the cards' uses (the process
        merge) wait until it is shown again."""
        self._take(message.update)
        if self.is_current:
            self._redraw()

    def _take(self, update: MonitorUpdate) -> None:
        self.latest, self._latest_at = update, time.monotonic()
        self.history.add(update.snapshot)
        self._uses_of = None

    def _early_update(self) -> MonitorUpdate | None:
        """The cards of the CLI's early hl-smi query, if it has already answered (never waits)."""
        early = self.app.early_query
        answer = early.ready_answer() if early is not None else None
        if answer is None:
            return None
        from gaudi_tui.core.devices.early_query import first_snapshot
        from gaudi_tui.core.devices.feed import MonitorUpdate

        snapshot = first_snapshot(answer)
        return MonitorUpdate(snapshot, None, ()) if snapshot is not None else None

    @property
    def uses(self) -> dict[int, CardUse]:
        """Each card's use in the latest update (made on first use after an update)."""
        if self._uses_of is not self.latest:
            self._uses_of = self.latest
            self._uses = self._card_uses(self.latest) if self.latest is not None else {}
        return self._uses

    # -- the screen's life -------------------------------------------------------------------------
    def on_screen_resume(self) -> None:
        self._show_details_reader(True)
        self._host_shown.set()
        if self.latest is not None:
            self._redraw()

    def on_screen_suspend(self) -> None:
        self._show_details_reader(False)
        self._host_shown.clear()

    def on_unmount(self) -> None:
        self._host_cancel.set()
        self._details_cancel.set()
        self._stop_feed(wait=3.0)


def _no_host() -> None:
    return None
