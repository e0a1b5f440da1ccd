"""Fleet: every Gaudi host and card a Prometheus server sees, one row per host.

A thread worker runs one screen refresh (`core.fleet.fetch.ScreenReader`: per-host aggregates for
every host, per-card values only for the rows on screen) every few seconds while the screen is shown;
rows scrolled into view get their cards from one more query; this screen only draws, and redraws only
the rows that changed. When Prometheus stops answering, the last answer stays, with its age and the
reason. Enter opens a host's cards with 5-minute sparklines from one `query_range`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.style import Style
from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input, Static

from gaudi_tui.core.fleet.address import ENV_VAR, prometheus_url
from gaudi_tui.core.fleet.model import JOB_SIZES, Host, Overview
from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.screens.fleet_rows import cells, theme_styles
from gaudi_tui.ui.screens.fleet_source import FleetSource, Loader
from gaudi_tui.ui.screens.fleet_status import METRICS, SORTS, age_line, banner_text, shown_hosts, status_text
from gaudi_tui.ui.widgets.host_grid import HostGrid, Row

if TYPE_CHECKING:
    from textual.timer import Timer

    from gaudi_tui.core.fleet.fetch import ScreenReader
    from gaudi_tui.core.fleet.prometheus import PrometheusClient

REFRESH_S = 5.0
SCROLL_WAIT_S = 0.15
"""Cards for rows scrolled into view are asked for once scrolling rests this long."""


class FleetLoaded(Message):
    def __init__(self, overview: Overview, cards: dict[str, Host], at: float) -> None:
        super().__init__()
        self.overview, self.cards, self.at = overview, cards, at


class CardsLoaded(Message):
    def __init__(self, cards: dict[str, Host], problems: list[str]) -> None:
        super().__init__()
        self.cards, self.problems = cards, problems


class FleetScreen(PanelScreen):
    TITLE = "Fleet"
    AUTO_FOCUS = "#fleet-hosts"
    HELP = (
        "Every Gaudi host a Prometheus server scrapes (Intel's exporter or `gaudi-tui exporter`), one row "
        "per host, one cell per card coloured by the chosen metric. Flags: down (up == 0), stale (no card "
        "data), N missing (fewer cards than in the last hour), hot (past the slowdown threshold), over "
        "cap, ECC rows (rows wait for replacement), scale-out down (an external NIC port is down: multi-node "
        "jobs using the card fail). Free = HBM unreserved and no pod; fits = the job sizes Intel's card sets "
        "allow on the free cards; 16 = a whole host for a multi-host job, every card free with its "
        f"scale-out ports up. Prometheus: --prometheus URL or ${ENV_VAR}."
    )
    DEFAULT_CSS = """
    FleetScreen #fleet-banner { display: none; border: round $warning; padding: 0 1; height: auto; }
    FleetScreen #fleet-banner.shown { display: block; }
    FleetScreen #fleet-status { height: auto; padding: 0 1; color: $text-muted; }
    FleetScreen #fleet-filter { display: none; }
    FleetScreen #fleet-filter.shown { display: block; }
    """
    BINDINGS = [
        Binding("m", "cycle_metric", "Metric", id="fleet.metric"),
        Binding("s", "cycle_sort", "Sort", id="fleet.sort"),
        Binding("slash", "filter", "Filter", id="fleet.filter", key_display="/"),
        Binding("j", "cycle_job", "Job size", id="fleet.job"),
        Binding("r", "refresh_now", "Refresh", id="fleet.refresh", show=False),
    ]

    def __init__(
        self,
        loader: Loader | None = None,
        url: str | None = None,
        interval: float = REFRESH_S,
        reader: ScreenReader | None = None,
    ) -> None:
        """`loader` replaces Prometheus (a saved /metrics, tests); `url` overrides the app's setting;
        `reader` replaces the one made from the URL (the bench reads a backfilled TSDB at a fixed time)."""
        super().__init__()
        self.source = FleetSource(loader, url, reader)
        self.interval = interval
        self.overview: Overview | None = None
        self.cards: dict[str, Host] = {}
        """Per-card values of the hosts that have been on screen (host name → Host)."""
        self.seen_at: float | None = None
        """Wall-clock time of the last answer with hosts."""
        self.problems: list[str] = []
        self.metric = 0
        self.sort = 0
        self.job = 0
        self.filter = ""
        self._styles: dict[str, Style] = {}
        self._scroll_timer: Timer | None = None

    # -- layout -------------------------------------------------------------------------------
    def compose_body(self) -> ComposeResult:
        """Composed with their first text (an update on mount would lay them out once more); the
        banner only once there is something to say (`_banner`), the row styles with the first rows
        (`_draw`): fewer widgets in the first frame."""
        if self.source.loader is None:
            self.source.url = self.source.url or prometheus_url(getattr(self.app, "prometheus", None))
        if self.source.none:
            yield self._banner_box(
                [f"No Prometheus server: start with `gaudi-tui --prometheus URL` or set {ENV_VAR}."]
            )
        yield Static(self._status_text(), id="fleet-status", markup=False)
        yield HostGrid(self._cells, id="fleet-hosts")

    def on_mount(self) -> None:
        self.query_one(HostGrid).focus()  # before the footer's first keys: it draws them once
        self.set_interval(self.interval, self._tick)

    def on_unmount(self) -> None:
        self.source.close()

    @property
    def client(self) -> PrometheusClient | None:
        return self.source.client

    @property
    def ready(self) -> bool:
        """Loaded, and every row on screen has its cards (tests, the bench)."""
        if self.overview is None:
            return False
        return all(
            row.cards is not None or row.host.state == "down"
            for row in self.query_one(HostGrid).rows_on_screen()
        )

    # -- refresh ------------------------------------------------------------------------------
    def _tick(self) -> None:
        if self.is_current:
            self._refresh()
            if self.seen_at is not None and self.problems:
                self._banner_now()

    def on_screen_resume(self) -> None:
        """Shown (first time or again): refresh, after the frame is drawn so it stays light."""
        self.call_after_refresh(self._refresh)

    def action_refresh_now(self) -> None:
        self._refresh()

    def _refresh(self) -> None:
        """One refresh in the worker, asking for the cards of the rows on screen (and the mean
        utilization of every host only while sorting by it)."""
        self.refresh_fleet(self._visible_names(), SORTS[self.sort][0] == "busiest")

    def _visible_names(self) -> list[str]:
        return [row.host.name for row in self.query_one(HostGrid).rows_on_screen()]

    @work(thread=True, exclusive=True, group="fleet", exit_on_error=False, description="fleet refresh")
    def refresh_fleet(self, visible: list[str], mean_util: bool = False) -> None:
        loaded = self.source.load(visible, mean_util)
        if loaded is not None:
            self.post_message(FleetLoaded(*loaded, time.time()))

    @work(thread=True, exclusive=True, group="fleet-cards", exit_on_error=False, description="fleet cards")
    def load_cards(self, names: list[str]) -> None:
        answer = self.source.cards(names)
        if answer is not None:
            self.post_message(CardsLoaded(*answer))

    def on_fleet_loaded(self, message: FleetLoaded) -> None:
        overview = message.overview
        if not overview.hosts and self.overview is not None and self.overview.hosts:
            self.problems = list(overview.problems)  # Prometheus stopped answering: keep the last answer
            self._banner_now()
            return
        recovered, self.problems = bool(self.problems), []
        self.seen_at = message.at if overview.hosts else self.seen_at
        if not recovered and overview == self.overview and message.cards == self.cards:
            return  # nothing changed: no redraw
        self.overview = overview
        self.cards = message.cards  # rows scrolled away drop theirs: asked again when back in view
        self._banner(list(overview.problems))
        self._draw()

    def on_cards_loaded(self, message: CardsLoaded) -> None:
        if message.problems:
            self._banner([*(self.overview.problems if self.overview else ()), *message.problems])
        if message.cards:
            self.cards.update(message.cards)
            self._draw()

    def on_host_grid_scrolled(self, event: HostGrid.Scrolled) -> None:
        event.stop()
        if self._scroll_timer is not None:
            self._scroll_timer.stop()
        self._scroll_timer = self.set_timer(SCROLL_WAIT_S, self._ask_missing_cards)

    def _ask_missing_cards(self) -> None:
        """Cards for the rows on screen that have none yet (scrolled into view, filtered, sorted)."""
        if self.source.loader is not None or self.overview is None:
            return
        missing = [row.host.name for row in self.query_one(HostGrid).rows_on_screen() if row.cards is None]
        if missing:
            self.load_cards(missing)

    # -- drawing ------------------------------------------------------------------------------
    def _banner(self, lines: list[str]) -> None:
        boxes = self.query("#fleet-banner")
        if boxes:
            banner = boxes.first(Static)
            banner.update(banner_text(lines))
            banner.set_class(bool(lines), "shown")
        elif lines:
            self.mount(self._banner_box(lines), before=self.query_one("#fleet-status"))

    def _banner_box(self, lines: list[str]) -> Static:
        return Static(banner_text(lines), id="fleet-banner", markup=False, classes="shown")

    def _banner_now(self) -> None:
        """The reason Prometheus gave no answer, and how old the rows shown are."""
        lines = list(self.problems)
        if self.seen_at is not None:
            lines.append(age_line(self.seen_at))
        self._banner(lines)

    def _status(self) -> None:
        self.query_one("#fleet-status", Static).update(self._status_text())

    def _status_text(self) -> str:
        return status_text(
            self.overview, self.source, JOB_SIZES[self.job], self.metric, self.sort, self.filter
        )

    def _cells(self, row: Row) -> tuple[Text, ...]:
        """One host row (built only when the row is on screen)."""
        return cells(row, self._styles, METRICS[self.metric][0], JOB_SIZES[self.job])

    def _draw(self, restyle: bool = False) -> None:
        self._status()
        if self.overview is None:
            return
        grid = self.query_one(HostGrid)
        styles = theme_styles(self.app.get_css_variables())  # the theme may have changed
        if restyle or styles != self._styles:
            self._styles = styles
            grid.restyle()
        cards = self.cards
        grid.show(
            [Row(h, cards.get(h.name)) for h in shown_hosts(self.overview.hosts, self.sort, self.filter)]
        )
        self.call_after_refresh(self._ask_missing_cards)

    # -- keys ---------------------------------------------------------------------------------
    def action_cycle_metric(self) -> None:
        self.metric = (self.metric + 1) % len(METRICS)
        self._draw(restyle=True)

    def action_cycle_sort(self) -> None:
        self.sort = (self.sort + 1) % len(SORTS)
        self._draw()
        if SORTS[self.sort][0] == "busiest" and self.source.loader is None:
            self._refresh()  # the mean utilization is asked only for this order

    def action_cycle_job(self) -> None:
        self.job = (self.job + 1) % len(JOB_SIZES)
        self._draw(restyle=True)

    async def action_filter(self) -> None:
        """The filter box is mounted on first use (it is not part of the first frame)."""
        boxes = self.query("#fleet-filter")
        if boxes:
            box = boxes.first(Input)
        else:
            box = Input(
                placeholder="filter hosts (name, state or flag); Enter keeps, Esc clears", id="fleet-filter"
            )
            await self.mount(box, before=self.query_one(HostGrid))
        box.add_class("shown")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter = event.value.strip()
        self._draw()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._close_filter(keep=True)

    def on_key(self, event: events.Key) -> None:
        box = self.query("#fleet-filter")
        if event.key == "escape" and box and box.first().has_focus:
            event.stop()
            box.first(Input).value = ""
            self._close_filter(keep=False)

    def _close_filter(self, keep: bool) -> None:
        box = self.query_one("#fleet-filter", Input)
        box.set_class(keep and bool(box.value), "shown")
        self.query_one(HostGrid).focus()

    def on_host_grid_selected(self, event: HostGrid.Selected) -> None:
        event.stop()
        if event.row.cards is None:
            self.notify("This host's cards are still being read; try again in a moment.")
            self._ask_missing_cards()
            return
        from gaudi_tui.ui.screens.fleet_host import HostScreen  # its DataTable is not in the first frame

        self.app.push_screen(HostScreen(event.row.cards, self.client))
