"""Devices: the live device map, every process on each card, the cards' NIC links, and choosing
the cards a job may use.

A thread runs the device feed (`core.devices.monitor.DeviceMonitor`: HLML, one long-lived hl-smi
child, NVML or host only) and posts each refresh as a message; a second thread posts the host
figures on their own timer, so the host row stays live whatever the device source does; a third,
started after the first frame, reads the slow details every 30 s while this screen is shown
(`core.devices.details`: one-shot `hl-smi -n link`/`-n ports` per card, or HLML's port masks, and
hl-smi's process table). This screen only draws.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import get_current_worker

from gaudi_tui.core.devices.feed import MonitorConfig, quick_fault
from gaudi_tui.core.devices.history import History
from gaudi_tui.ui.screens.base import PanelScreen

if TYPE_CHECKING:
    # The sources, parsers and psutil load in the feed threads; the model, the map's table, its
    # texts and dialogs when the map is built or used: all after the first frame (a test checks).
    from gaudi_tui.core.devices.details import CardDetails
    from gaudi_tui.core.devices.feed import MonitorUpdate
    from gaudi_tui.core.devices.holders import CardHolder
    from gaudi_tui.core.devices.model import CardLinks, Device, DeviceProcess, DeviceSnapshot
    from gaudi_tui.core.devices.sources.host import HostStats
    from gaudi_tui.core.devices.usage import CardUse
    from gaudi_tui.ui.widgets.device_table import DeviceTable

log = logging.getLogger(__name__)

DETAIL_SPARK = 50
DETAIL_NOTE = (
    "Sparklines: last 5 minutes, left to right. HBM rsvd = hl-smi memory.used (reserved, not in use); "
    "power from `-Q power.draw` is the 54 V rail only."
)
TERM_GRACE_S = 5.0
SORTS: tuple[tuple[str, str | None, Callable[[Device], float]], ...] = (
    ("index", None, lambda d: d.index),
    ("module ID", "mod", lambda d: d.module_id if d.module_id is not None else 99),
    ("utilization", "util", lambda d: -(d.utilization_pct or 0)),
    ("HBM", "hbm", lambda d: -(d.memory_used_mib or 0)),
    ("power", "power", lambda d: -(d.power_draw_w or 0)),
    ("temperature", "temp", lambda d: -(d.temperature_c or 0)),
)


class Feed(Protocol):
    def run(self) -> None: ...


FeedFactory = Callable[[Callable[["MonitorUpdate"], object], threading.Event], Feed]
DetailsFactory = Callable[
    [Callable[[], list["Device"]], Callable[["CardDetails"], object], threading.Event, Callable[[], object]],
    Feed,
]
"""(the feed's cards now, on_details, cancel, the initialised pyhlml or None) → the details reader."""
HostReading = Callable[[], "HostStats | None"]


class DevicesUpdated(Message):
    def __init__(self, update: MonitorUpdate) -> None:
        super().__init__()
        self.update = update


class HostUpdated(Message):
    def __init__(self, stats: HostStats) -> None:
        super().__init__()
        self.stats = stats


class DetailsRead(Message):
    def __init__(self, details: CardDetails) -> None:
        super().__init__()
        self.details = details


class HolderSignalled(Message):
    """A TERM or KILL was sent (or refused); `gone` says whether the process has exited."""

    def __init__(self, holder: CardHolder, sig: signal.Signals, gone: bool, refusal: str | None) -> None:
        super().__init__()
        self.holder, self.sig, self.gone, self.refusal = holder, sig, gone, refusal


class DevicesScreen(PanelScreen):
    TITLE = "Devices"
    HELP = (
        "Live per-card metrics with 5-minute sparklines, who holds each card, and choosing cards for a "
        "job. HBM rsvd is hl-smi's memory.used: memory reserved on the card (a framework reserves nearly "
        "all of it when it starts), so it tells busy from free. The chosen cards (module IDs) are what "
        "Training uses; they are checked against Intel's supported sets. Link = NIC ports up of total "
        "(red: a scale-out port is down, so multi-node jobs using the card fail); l shows every port. "
        "The detail lists every process on the card (hl-smi's table and /proc)."
    )
    DEFAULT_CSS = """
    DevicesScreen #devices-banner { display: none; border: round $warning; padding: 0 1; height: auto; }
    DevicesScreen #devices-banner.shown { display: block; }
    DevicesScreen #devices-links-banner { display: none; border: round $error; padding: 0 1; height: auto; }
    DevicesScreen #devices-links-banner.shown { display: block; }
    DevicesScreen #devices-status { height: auto; padding: 0 1; color: $text-muted; }
    DevicesScreen #devices-body { height: 1fr; }
    DevicesScreen #devices-choice { height: auto; padding: 0 1; border-top: solid $primary; }
    DevicesScreen #devices-detail-box { height: 1fr; border-top: solid $primary; padding: 0 1; }
    DevicesScreen #devices-detail-note { color: $text-muted; }
    DevicesScreen #devices-detail-note.-hidden { display: none; }
    """
    BINDINGS = [
        Binding("space", "toggle_card", "Choose", id="devices.choose"),
        Binding("n", "nearest_set", "Nearest set", id="devices.nearest"),
        Binding("x", "clear_cards", "Clear", id="devices.clear", show=False),
        Binding("c", "copy_export", "Copy export", id="devices.copy"),
        Binding("s", "cycle_sort", "Sort", id="devices.sort"),
        Binding("k", "stop_holder", "Stop holder", id="devices.stop"),
        Binding("l", "show_links", "Links", id="devices.links"),
        Binding("r", "retry", "Retry now", id="devices.retry", show=False),
    ]

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
        self.history = History(seconds=300, interval=self.config.interval)
        self.latest: MonitorUpdate | None = None
        self.uses: dict[int, CardUse] = {}
        self.chosen: set[int] = set()
        self.sort = 0
        self._feed: Feed | None = None
        self._details_reader: Feed | None = None
        self._details_shown = True
        self._feed_cancel: threading.Event | None = None
        self._feed_thread: threading.Thread | None = None
        self._built = False
        """The map (table, choice, detail) is mounted after the first frame."""

    # -- layout -------------------------------------------------------------------------------
    def compose_body(self) -> ComposeResult:
        # Composed with their first texts, not updated in on_mount: an update before the first frame
        # makes Textual draw a frame of those widgets alone, over a layout not made yet.
        fault = quick_fault(self.config)
        banner = _banner_text(fault.banner() if fault else None)
        yield _composed(banner, "devices-banner", "shown" if banner else "")
        yield Static("", id="devices-links-banner", markup=False)
        yield _composed(self._status_text(None), "devices-status")
        yield Vertical(id="devices-body")  # filled after the first frame (`_after_first_frame`)

    def _compose_map(self) -> list[Widget]:
        from gaudi_tui.ui.widgets.device_table import DeviceTable

        return [
            DeviceTable(id="devices-table"),
            Static("", id="devices-choice", markup=False),
            VerticalScroll(
                Static("", id="devices-detail", markup=False),
                # Constant, so apart from the detail: the detail is drawn again every refresh, this never.
                Static(DETAIL_NOTE, id="devices-detail-note", markup=False, classes="-hidden"),
                id="devices-detail-box",
            ),
        ]

    def on_mount(self) -> None:
        self.chosen = set(self.app.selected_cards)
        # The first frame first (header, host row, footer); then the feeds start (they load their
        # sources, and hl-smi starts while the map is built) and the map is built.
        self.app.after_first_frame(self._after_first_frame)

    async def _after_first_frame(self) -> None:
        if self._host_cancel.is_set():  # unmounted before its first frame
            return
        if self._config_later is not None:
            self.config = self._config_later()
            self.history = History(seconds=300, interval=self.config.interval)
        self.start_feed()
        threading.Thread(target=self._tick_host, name="host row", daemon=True).start()
        threading.Thread(target=self._run_details, name="card details", daemon=True).start()
        await self.query_one("#devices-body", Vertical).mount_all(self._compose_map())
        if self._host_cancel.is_set() or not self.query("#devices-table"):  # the app quit meanwhile
            return
        self._built = True
        if self.focused is None:  # as if it had been composed: the map takes the keys
            self._table().focus()
        if self.sort:
            _, column, _ = SORTS[self.sort]
            self._table().label_sort(column, "▲" if column == "mod" else "▼")
        if self.latest is not None:
            self._redraw()
        else:
            self._render_choice()
            self._render_detail()

    def _tick_host(self) -> None:
        from gaudi_tui.core.devices.sources.host import tick_host

        def post(stats: HostStats) -> None:
            self.post_message(HostUpdated(stats))

        tick_host(post, self._host_cancel, self.config.interval, self.host_reader)

    def _live_devices(self) -> list[Device]:
        """The cards the details reader asks about: only a live hl-smi or HLML feed's (a replay's
        or a saved output's links come with its snapshot)."""
        snapshot = self.snapshot
        return list(snapshot.devices) if snapshot.source in ("hl-smi", "hlml") else []

    def _hlml(self) -> object:
        """The pyhlml the feed initialised, when it reads HLML (never imported here)."""
        import sys

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
            self.uses = self._card_uses(self.latest)
            if self.is_current:
                self._redraw()

    def _card_uses(self, update: MonitorUpdate) -> dict[int, CardUse]:
        from gaudi_tui.core.devices.usage import card_uses

        return card_uses(self._with_processes(update), update.holders)

    def _with_processes(self, update: MonitorUpdate) -> DeviceSnapshot:
        """The snapshot with every process on each card: hl-smi's table (the details reader's, or a
        replay's own) merged with the /proc holders."""
        from dataclasses import replace

        from gaudi_tui.core.devices.card_processes import merge_processes

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

    def _device_monitor(self, on_update: Callable[[MonitorUpdate], object], cancel: threading.Event) -> Feed:
        """The real feed; built in the feed thread, so the sources and parsers load there. The host
        row has its own timer here, so the monitor does not read it."""
        from gaudi_tui.core.devices.monitor import DeviceMonitor

        return DeviceMonitor(self.config, on_update, cancel, host_reader=_no_host)

    # -- the feed -------------------------------------------------------------------------------
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
        self.latest, self._latest_at = message.update, time.monotonic()
        self.history.add(message.update.snapshot)
        self.uses = self._card_uses(message.update)
        if self.is_current:
            self._redraw()

    def on_host_updated(self, message: HostUpdated) -> None:
        """New host figures. While the device feed refreshes, they are drawn with its next update (one
        repaint per interval, not two); when it is quiet (a hanging hl-smi, the metadata reads, a
        backoff wait), they are drawn at once."""
        self.host = message.stats
        feed_quiet = time.monotonic() - self._latest_at > 1.5 * self.config.interval
        if self.is_current and feed_quiet:
            _show(self.query_one("#devices-status", Static), self._status_text(self.latest))

    def on_screen_resume(self) -> None:
        self._show_details_reader(True)
        if self.latest is not None:
            self._redraw()

    def on_screen_suspend(self) -> None:
        self._show_details_reader(False)

    def _show_details_reader(self, shown: bool) -> None:
        """The details reader reads only while this screen is shown (`DetailsPoller.hide`)."""
        self._details_shown = shown
        method = getattr(self._details_reader, "show" if shown else "hide", None)
        if method is not None:
            method()

    def on_unmount(self) -> None:
        self._host_cancel.set()
        self._details_cancel.set()
        self._stop_feed(wait=3.0)

    # -- drawing --------------------------------------------------------------------------------
    @property
    def snapshot(self) -> DeviceSnapshot:
        if self.latest:
            return self.latest.snapshot
        from gaudi_tui.core.devices.model import DeviceSnapshot

        return DeviceSnapshot(source="none")

    def _show_banner(self, text: str | None) -> None:
        banner = self.query_one("#devices-banner", Static)
        _show(banner, _banner_text(text))
        banner.set_class(bool(text), "shown")

    def _redraw(self) -> None:
        update = self.latest
        if update is None or not self._built:
            return
        self._show_banner(update.faults[0].banner() if update.faults else None)
        self._show_links_banner()
        _show(self.query_one("#devices-status", Static), self._status_text(update))
        key = SORTS[self.sort][2]
        devices = sorted(update.snapshot.devices, key=lambda d: (key(d), d.index))
        table = self._table()
        by_index = {c.index: c for c in self.card_links if c.index is not None}
        table.show(devices, self.uses, self.history, self.chosen, by_index)
        self._render_choice()
        self._render_detail()

    def _show_links_banner(self) -> None:
        from gaudi_tui.core.devices import links

        text = links.banner(self.snapshot.devices, self.card_links)
        banner = self.query_one("#devices-links-banner", Static)
        _show(banner, f"✗ {text}" if text else "")
        banner.set_class(bool(text), "shown")

    def _status_text(self, update: MonitorUpdate | None) -> str:
        """The host row and the source line; before the feed's first update, `update` is None."""
        stats = self.host or (update.host if update else None)
        host = stats.describe() if stats else "host: measuring…"
        if update is None:
            parts = ["0 cards via none"]
        else:
            snapshot = update.snapshot
            parts = [f"{len(snapshot.devices)} cards via {snapshot.source}"]
            if snapshot.hl_smi_version:
                parts.append(f"hl-smi {snapshot.hl_smi_version}")
            if snapshot.driver_version:
                parts.append(f"driver {snapshot.driver_version}")
        parts.append(f"sort: {SORTS[self.sort][0]}")
        return host + "\n" + " · ".join(parts)

    def _table(self) -> DeviceTable:
        return cast("DeviceTable", self.query_one("#devices-table"))

    def _current_device(self) -> Device | None:
        if not self._built:
            return None
        index = self._table().current_index
        return next((d for d in self.snapshot.devices if d.index == index), None)

    def _render_detail(self) -> None:
        if not self._built:
            return
        detail = self.query_one("#devices-detail", Static)
        device = self._current_device()
        self.query_one("#devices-detail-note").set_class(device is None, "-hidden")
        if device is None:
            _show(
                detail,
                "Devices — no card data. The map fills in when HLML, hl-smi or NVML answers; the host "
                "row above is always live.",
            )
            return
        _show(detail, self._detail_text(device))

    def _detail_text(self, device: Device) -> Text:
        from gaudi_tui.ui.palette import palette
        from gaudi_tui.ui.widgets.sparkline_text import spark

        window = self.history.size
        text = Text()
        title = f"Card {device.index} · module {device.module_id if device.module_id is not None else '?'}"
        title += f" · {device.product or '?'} ({device.name or '?'}) · {device.bus_id or 'bus ?'}"
        title += f" · NUMA {device.numa_node if device.numa_node is not None else '?'}"
        text.append(title + "\n", style="bold")
        rows = (
            ("Util ", f"{_fmt(device.utilization_pct)} %", "utilization", 100),
            (
                "HBM  ",
                f"{_fmt(device.memory_used_mib)} / {_fmt(device.memory_total_mib)} MiB reserved",
                "memory",
                device.memory_total_mib,
            ),
            (
                "Power",
                f"{_fmt(device.power_draw_w)} / {_fmt(device.power_cap_w)} W",
                "power",
                device.power_cap_w,
            ),
        )
        for label, value, metric, top in rows:
            line = spark(self.history.series(device.index, metric), DETAIL_SPARK, window, top)
            text.append(f"{label} {line} {value}\n")
        text.append(
            f"Temp {_fmt(device.temperature_c)} °C · uncorrected ECC errors {_fmt(device.uncorrected_errors)}"
            f" · UUID {device.uuid or '?'}\n"
        )
        text.append_text(self._links_line(device))
        use = self.uses.get(device.index)
        if use is not None and use.processes:
            text.append(f"Processes on card {device.index} ({len(use.processes)}):\n")
        for process in use.processes if use else ():
            holder = use is not None and bool(use.holders) and process.pid == use.holders[0].pid
            text.append(_process_line(process, holder, self.snapshot.source in ("hl-smi", "hlml")))
        if use and (why := use.explanation()):
            text.append("Busy, holder not visible: " + why + "\n", style=palette(self.app).warning)
        text.rstrip()
        return text

    def _links_line(self, device: Device) -> Text:
        from gaudi_tui.ui.palette import palette

        colours = palette(self.app)
        found = next((c for c in self.card_links if c.index == device.index), None)
        if found is None or not found.ports:
            why = "; ".join(self.link_errors[:1]) or "not read yet (every 30 s)"
            return Text(f"Links: unknown ({why})\n")
        line = Text(f"Links: {found.up} of {len(found.ports)} NIC ports up")
        external = [p for p in found.ports if p.type == "external"]
        if external:
            line.append(" · scale-out ")
            for at, port in enumerate(external):
                line.append(", " if at else "")
                line.append(
                    f"{port.number} {'up' if port.up else 'DOWN'}", style="" if port.up else colours.error
                )
        elif not found.types_known:
            line.append(" · which are scale-out: unknown (hl-smi -n ports)")
        if found.internal_down:
            line.append(
                f" · scale-up down: {', '.join(map(str, found.internal_down))}", style=colours.warning
            )
        unknown = [p.number for p in found.ports if p.type is None and not p.up]
        if unknown:
            line.append(f" · down (type unknown): {', '.join(map(str, unknown))}", style=colours.warning)
        line.append(" · l: every port\n")
        return line

    def _render_choice(self) -> None:
        if not self._built:
            return
        _show(self.query_one("#devices-choice", Static), self._choice_text())

    def _modules_here(self) -> dict[int, Device]:
        return {d.module_id: d for d in self.snapshot.devices if d.module_id is not None}

    def _choice_text(self) -> Text:
        if not self.chosen:
            return Text(
                "No cards chosen — space chooses the card under the cursor; jobs started from the panel "
                "use the chosen cards (HABANA_VISIBLE_MODULES)."
            )
        from gaudi_tui.core.devices import cardsets
        from gaudi_tui.ui.palette import palette

        here = self._modules_here()
        check = cardsets.check_modules(self.chosen, here.keys() if here else None)
        text = Text()
        colours = palette(self.app)
        text.append(self._export_line() + "\n")
        text.append(
            ("✓ " if check.ok else "✗ ") + check.message, style=colours.success if check.ok else colours.error
        )
        if not check.ok and check.nearest:
            text.append(" (n uses it)")
        for module in sorted(self.chosen):
            device = here.get(module)
            use = self.uses.get(device.index) if device else None
            if device is not None and use is not None and use.busy:
                text.append(
                    f"\n⚠ card {device.index} (module {module}) is busy: {use.label()}", style=colours.warning
                )
        return text

    def _export_line(self) -> str:
        here = self._modules_here()
        index_of = {m: d.index for m, d in here.items()}
        if not all(m in index_of for m in self.chosen):
            index_of = {}
        from gaudi_tui.core.devices import cardsets

        return cardsets.export_line(self.chosen, index_of or None)

    def on_device_table_row_highlighted(self, _event: DeviceTable.RowHighlighted) -> None:
        self._render_detail()

    # -- actions --------------------------------------------------------------------------------
    def _set_chosen(self, modules: set[int]) -> None:
        self.chosen = modules
        self.app.selected_cards = tuple(sorted(modules))
        if self.latest is not None:
            self._redraw()
        else:
            self._render_choice()

    def action_toggle_card(self) -> None:
        device = self._current_device()
        if device is None:
            self.notify("No card under the cursor.", severity="warning")
            return
        if device.module_id is None:
            self.notify(
                f"Card {device.index} has no module ID (the source did not report it), so it cannot go in "
                "HABANA_VISIBLE_MODULES.",
                severity="error",
            )
            return
        self._set_chosen(self.chosen ^ {device.module_id})

    def action_nearest_set(self) -> None:
        from gaudi_tui.core.devices import cardsets

        check = cardsets.check_modules(self.chosen, self._modules_here().keys() or None)
        if check.ok or not check.nearest:
            self.notify(check.message if not check.ok else "The chosen cards are already a supported set.")
            return
        self._set_chosen(set(check.nearest))

    def action_clear_cards(self) -> None:
        self._set_chosen(set())

    def action_copy_export(self) -> None:
        if not self.chosen:
            self.notify("Choose cards first (space).", severity="warning")
            return
        line = self._export_line()
        self.app.copy_to_clipboard(line)
        self.notify(f"Copied to the clipboard: {line}", title="Export line")

    def action_cycle_sort(self) -> None:
        self.sort = (self.sort + 1) % len(SORTS)
        name, column, _ = SORTS[self.sort]
        if self._built:
            self._table().label_sort(column, "▲" if column == "mod" else "▼")
        if self.latest is not None:
            self._redraw()
        self.notify(f"Sorted by {name}.")

    def action_retry(self) -> None:
        self.start_feed()
        self.notify("Looking for the card sources again.")

    def action_show_links(self) -> None:
        device = self._current_device()
        if device is None:
            self.notify("No card under the cursor.", severity="warning")
            return
        found = next((c for c in self.card_links if c.index == device.index), None)
        from gaudi_tui.ui.screens.card_links import CardLinksScreen

        self.app.push_screen(CardLinksScreen(device, found, "; ".join(self.link_errors[:2])))

    def action_stop_holder(self) -> None:
        device = self._current_device()
        use = self.uses.get(device.index) if device else None
        if device is None or use is None or not use.holders:
            why = use.explanation() if use else None
            self.notify(why or "No visible process holds this card.", severity="warning")
            return
        from gaudi_tui.core.devices import holders
        from gaudi_tui.ui.widgets.confirm import ConfirmScreen

        holder = use.holders[0]
        refusal = holders.can_signal(holder, self.config.proc_root)
        if refusal:
            self.notify(refusal, severity="error", title="Cannot stop it")
            return
        question = (
            f"Stop PID {holder.pid} ({holder.user or '?'}), holding card {holder.index}?\n{holder.command}\n\n"
            f"Sends SIGTERM; if it is still running after {TERM_GRACE_S:.0f} s you are asked about SIGKILL."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._signal(holder, signal.SIGTERM)

        self.app.push_screen(ConfirmScreen(question), answered)

    @work(thread=True, exclusive=True, exit_on_error=False, group="stop-holder", description="stop holder")
    def _signal(self, holder: CardHolder, sig: signal.Signals) -> None:
        from gaudi_tui.core.devices import holders

        refusal = holders.send(holder, sig, self.config.proc_root)
        grace = TERM_GRACE_S if sig == signal.SIGTERM else 2.0
        gone = refusal is None and holders.wait_gone(
            holder, grace, get_current_worker().cancelled_event, self.config.proc_root
        )
        self.post_message(HolderSignalled(holder, sig, gone, refusal))

    def on_holder_signalled(self, message: HolderSignalled) -> None:
        holder = message.holder
        for reader, method in ((self._feed, "request_holder_scan"), (self._details_reader, "request")):
            request = getattr(reader, method, None)
            if request is not None:
                request()
        if message.refusal:
            self.notify(message.refusal, severity="error", title="Not stopped")
        elif message.gone:
            self.notify(f"PID {holder.pid} has exited; card {holder.index} is free once the map refreshes.")
        elif message.sig == signal.SIGTERM:
            question = (
                f"PID {holder.pid} is still running {TERM_GRACE_S:.0f} s after SIGTERM.\n{holder.command}\n\n"
                "Send SIGKILL? It cannot clean up: unsaved work is lost."
            )

            from gaudi_tui.ui.widgets.confirm import ConfirmScreen

            def answered(yes: bool | None) -> None:
                if yes:
                    self._signal(holder, signal.SIGKILL)

            self.app.push_screen(ConfirmScreen(question), answered)
        else:
            self.notify(
                f"PID {holder.pid} did not exit after SIGKILL (stuck in the driver?).", severity="error"
            )


_SHOWN: weakref.WeakKeyDictionary[Static, tuple[str | Text, tuple[int, int]]] = weakref.WeakKeyDictionary()


def _show(widget: Static, content: str | Text) -> None:
    """Update a Static only when its content changed, and re-layout only when its shape did (a
    layout pass redraws the whole screen: that is most of a refresh's CPU)."""
    shape = _shape(content)
    seen = _SHOWN.get(widget)
    if seen is not None and seen[0] == content:
        return
    widget.update(content, layout=seen is None or seen[1] != shape)
    _SHOWN[widget] = (content, shape)


def _shape(content: str | Text) -> tuple[int, int]:
    lines = (content.plain if isinstance(content, Text) else content).split("\n")
    return len(lines), max(len(line) for line in lines)


def _composed(content: str | Text, id: str, classes: str = "") -> Static:
    """A Static composed with its content, noted as shown (so `_show` compares against it)."""
    widget = Static(content, id=id, markup=False, classes=classes)
    _SHOWN[widget] = (content, _shape(content))
    return widget


def _banner_text(fault: str | None) -> str:
    return f"⚠ {fault} (retries automatically; r retries now)" if fault else ""


def _no_host() -> None:
    return None


def _fmt(value: float | int | None) -> str:
    if value is None:
        return "–"
    return f"{value:.0f}" if isinstance(value, float) else str(value)


def _process_line(process: DeviceProcess, holder: bool, live: bool) -> str:
    """`PID 107684 alice 16770 MiB since 2026-12-01 09:10: python train.py` (what /proc hides, said so)."""
    if process.user is None:
        who = "another user's or container's (/proc hides it)" if live else "user not recorded"
    else:
        mine = process.user == _me()
        who = process.user if mine else f"{process.user} (another user)"
    memory = f" {process.memory_mib} MiB" if process.memory_mib is not None else ""
    since = f" since {_clock(process.started)}" if process.started is not None else ""
    command = process.command or f"{process.name} (command line hidden)"
    stop = " — k stops it" if holder else ""
    return f"  PID {process.pid} {who}{memory}{since}: {command}{stop}\n"


def _me() -> str | None:
    import os
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return None


def _clock(epoch: float | None) -> str:
    if epoch is None:
        return "?"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))
