"""Devices: the live device map, every process on each card, the cards' NIC links, and choosing
the cards a job may use.

The feeds (the device monitor, the host timer, the details reader) run in threads
(`devices_feeds`); `k` stops a card's holder (`devices_stop`); the detail pane's and the chosen
cards' texts come from `devices_detail` and `devices_choice`. This screen only draws.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.widget import Widget
from textual.widgets import Static

from gaudi_tui.core.devices.feed import MonitorConfig, quick_fault
from gaudi_tui.ui.screens.devices_feeds import DetailsFactory, FeedFactory, HostReading, HostUpdated
from gaudi_tui.ui.screens.devices_stop import HolderStopScreen
from gaudi_tui.ui.widgets.static_update import composed, show

if TYPE_CHECKING:
    from rich.text import Text

    # The sources, parsers and psutil load in the feed threads; the model, the map's table, its
    # texts and dialogs when the map is built or used: all after the first frame (a test checks).
    from gaudi_tui.core.devices.feed import MonitorUpdate
    from gaudi_tui.core.devices.model import Device
    from gaudi_tui.ui.widgets.device_table import DeviceTable

SORTS: tuple[tuple[str, str | None, Callable[[Device], float]], ...] = (
    ("index", None, lambda d: d.index),
    ("module ID", "mod", lambda d: d.module_id if d.module_id is not None else 99),
    ("utilization", "util", lambda d: -(d.utilization_pct or 0)),
    ("HBM", "hbm", lambda d: -(d.memory_used_mib or 0)),
    ("power", "power", lambda d: -(d.power_draw_w or 0)),
    ("temperature", "temp", lambda d: -(d.temperature_c or 0)),
)


class DevicesScreen(HolderStopScreen):
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
    DevicesScreen #devices-detail { height: auto; }
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
        """As `FeedScreen`: `config` may be a function (called when the feed starts); the others
        replace the device monitor, the psutil reader and the details reader (tests)."""
        super().__init__(config, feed, host_reader, details)
        self.chosen: set[int] = set()
        self.sort = 0
        self._statics: dict[str, Static] = {}
        self._device_table: DeviceTable | None = None
        self._built = False
        """The map (table, choice, detail) is there: composed with the first frame when hl-smi's early
        answer is (`compose_body`), else mounted after it."""
        self._drawn = False
        """True once an update of the feed has been drawn on the map."""

    # -- layout -------------------------------------------------------------------------------
    def compose_body(self) -> ComposeResult:
        # Composed with their first texts, not updated in on_mount: an update before the first frame
        # makes Textual draw a frame of those widgets alone, over a layout not made yet.
        first = self._early_update()
        fault = quick_fault(self.config) if first is None else None
        banner = _banner_text(fault.banner() if fault else None)
        yield composed(banner, "devices-banner", "shown" if banner else "")
        yield Static("", id="devices-links-banner", markup=False)
        yield composed(self._status_text(first), "devices-status")
        if first is None:
            yield Vertical(id="devices-body")  # filled after the first frame (`_after_first_frame`)
            return
        # hl-smi answered while Textual loaded: the first frame is the map with its cards.
        self._take(first)
        yield Vertical(*self._compose_map(), id="devices-body")

    def _compose_map(self) -> list[Widget]:
        from gaudi_tui.ui.screens.devices_detail import DETAIL_NOTE, DETAIL_PARTS
        from gaudi_tui.ui.widgets.device_table import DeviceTable

        return [
            DeviceTable(id="devices-table"),
            Static("", id="devices-choice", markup=False),
            VerticalScroll(
                # The card's identity, its live values, its links and processes: apart, so a refresh
                # repaints the live values alone (`detail_parts`).
                Vertical(
                    *(Static("", id=f"devices-detail-{part}", markup=False) for part in DETAIL_PARTS),
                    id="devices-detail",
                ),
                # Constant, so apart from the detail: the detail is drawn again every refresh, this never.
                Static(DETAIL_NOTE, id="devices-detail-note", markup=False, classes="-hidden"),
                id="devices-detail-box",
            ),
        ]

    def on_mount(self) -> None:
        self.chosen = set(self.app.selected_cards)
        if self.latest is not None:  # composed with the map (`compose_body`): its rows now
            self._show_built()
        # The first frame first (header, host row, footer, and the map if hl-smi answered while
        # Textual loaded); then the feeds start (they load their sources, and hl-smi starts while
        # the map is built) and the map is built, if it is not yet.
        self.app.after_first_frame(self._after_first_frame)

    async def _after_first_frame(self) -> None:
        if self._host_cancel.is_set():  # unmounted before its first frame
            return
        self._start_feeds()
        if self._built:  # composed with the map
            return
        await self.query_one("#devices-body", Vertical).mount_all(self._compose_map())
        if self._host_cancel.is_set() or not self.query("#devices-table"):  # the app quit meanwhile
            return
        try:
            self._show_built()
        except NoMatches:  # the app quit meanwhile: its widgets are being removed, one by one
            return

    def _show_built(self) -> None:
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

    def on_host_updated(self, message: HostUpdated) -> None:
        """New host figures. While the device feed refreshes, they are drawn with its next update (one
        repaint per interval, not two); when it is quiet (a hanging hl-smi, the metadata reads, a
        backoff wait) or its last update was a fault (it does not refresh on time then), they are
        drawn at once."""
        self.host = message.stats
        faulted = self.latest is not None and bool(self.latest.faults)
        feed_quiet = faulted or time.monotonic() - self._latest_at > 1.5 * self.config.interval
        if self.is_current and feed_quiet:
            show(self._static("devices-status"), self._status_text(self.latest))

    # -- drawing --------------------------------------------------------------------------------
    def _show_banner(self, text: str | None) -> None:
        banner = self._static("devices-banner")
        show(banner, _banner_text(text))
        banner.set_class(bool(text), "shown")

    def _redraw(self) -> None:
        update = self.latest
        if update is None or not self._built:
            return
        self._show_banner(update.faults[0].banner() if update.faults else None)
        self._show_links_banner()
        show(self._static("devices-status"), self._status_text(update))
        key = SORTS[self.sort][2]
        devices = sorted(update.snapshot.devices, key=lambda d: (key(d), d.index))
        table = self._table()
        by_index = {c.index: c for c in self.card_links if c.index is not None}
        table.show(devices, self.uses, self.history, self.chosen, by_index)
        self._render_choice()
        self._render_detail()
        if not self._drawn and self._feed_thread is not None:  # the feed's first update: once it is
            self._drawn = True  # on the terminal, the rest of start-up (links, processes, the probe)
            self.call_after_refresh(self._first_drawn)

    def _first_drawn(self) -> None:
        if not self._host_cancel.is_set():  # not unmounted meanwhile
            self._start_details()
            self.app.first_screen_drawn()

    def _show_links_banner(self) -> None:
        from gaudi_tui.core.devices import links

        text = links.banner(self.snapshot.devices, self.card_links)
        banner = self._static("devices-links-banner")
        show(banner, f"✗ {text}" if text else "")
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

    def _static(self, id: str) -> Static:
        """One of this screen's Statics, looked up once (a query walks the DOM: each refresh asked five)."""
        found = self._statics.get(id)
        if found is None:
            found = self._statics[id] = self.query_one(f"#{id}", Static)
        return found

    def _table(self) -> DeviceTable:
        if self._device_table is None:
            self._device_table = cast("DeviceTable", self.query_one("#devices-table"))
        return self._device_table

    def _current_device(self) -> Device | None:
        if not self._built:
            return None
        index = self._table().current_index
        return next((d for d in self.snapshot.devices if d.index == index), None)

    def _render_detail(self) -> None:
        if not self._built:
            return
        from gaudi_tui.ui.palette import palette
        from gaudi_tui.ui.screens.devices_detail import DETAIL_PARTS, NO_CARD, detail_parts

        device = self._current_device()
        self._static("devices-detail-note").set_class(device is None, "-hidden")
        if device is None:
            parts: tuple[str | Text, ...] = (NO_CARD, "", "")
        else:
            live = self.snapshot.source in ("hl-smi", "hlml")
            parts = detail_parts(
                device, self.history, self.uses, live, self.card_links, self.link_errors, palette(self.app)
            )
        for name, text in zip(DETAIL_PARTS, parts, strict=True):
            part = self._static(f"devices-detail-{name}")
            show(part, text)
            part.display = bool(text)  # an empty part takes no line

    def _render_choice(self) -> None:
        if not self._built:
            return
        from gaudi_tui.ui.palette import palette
        from gaudi_tui.ui.screens.devices_choice import choice_text

        text = choice_text(self.chosen, self.snapshot.devices, self.uses, palette(self.app))
        show(self._static("devices-choice"), text)

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
        from gaudi_tui.ui.screens.devices_choice import check

        found = check(self.chosen, self.snapshot.devices)
        if found.ok or not found.nearest:
            self.notify(found.message if not found.ok else "The chosen cards are already a supported set.")
            return
        self._set_chosen(set(found.nearest))

    def action_clear_cards(self) -> None:
        self._set_chosen(set())

    def action_copy_export(self) -> None:
        if not self.chosen:
            self.notify("Choose cards first (space).", severity="warning")
            return
        from gaudi_tui.ui.screens.devices_choice import export_line

        line = export_line(self.chosen, self.snapshot.devices)
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


def _banner_text(fault: str | None) -> str:
    return f"⚠ {fault} (retries automatically; r retries now)" if fault else ""
