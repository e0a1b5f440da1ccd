"""Fleet: every Gaudi host and card a Prometheus server sees, one row per host.

A thread worker runs one fleet refresh (`core.fleet.fetch.refresh`: one query per metric for the
whole fleet) every few seconds while the screen is shown; this screen only draws. Enter opens a
host's cards with 5-minute sparklines from one `query_range`.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.color import Color
from textual.message import Message
from textual.widgets import Input, Static

from gaudi_tui.core.fleet import fetch
from gaudi_tui.core.fleet.model import HOST_CARDS, JOB_SIZES, Card, Fleet, Host, worst_first
from gaudi_tui.core.fleet.prometheus import ENV_VAR, PrometheusClient, PrometheusError, prometheus_url
from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.screens.fleet_host import HostScreen
from gaudi_tui.ui.widgets.host_grid import HostGrid

REFRESH_S = 5.0
METRICS = (("utilization", "util %"), ("hbm", "HBM %"), ("power", "power % of cap"), ("temperature", "°C"))
SORTS: tuple[tuple[str, Callable[[list[Host]], list[Host]]], ...] = (
    ("worst first", worst_first),
    ("name", lambda hosts: sorted(hosts, key=lambda h: h.name)),
    ("free cards", lambda hosts: sorted(hosts, key=lambda h: (-len(h.free_ids), h.name))),
    ("busiest", lambda hosts: sorted(hosts, key=lambda h: (-_mean_util(h), h.name))),
)
Loader = Callable[[], Fleet]


def _mean_util(host: Host) -> float:
    values = [c.utilization_pct for c in host.cards if c.utilization_pct is not None]
    return sum(values) / len(values) if values else -1.0


def card_text(card: Card, metric: str) -> str:
    """Three characters for one card under the chosen metric."""
    if metric == "temperature":
        value = card.temperature_c
    else:
        ratio = card.ratio(metric)
        value = None if ratio is None else ratio * 100
    return "  ·" if value is None else f"{min(value, 999):3.0f}"


def level(card: Card, metric: str) -> str:
    """Theme variable naming the card's colour: flagged → error; else by its share of the scale."""
    if card.flags:
        return "error"
    ratio = card.ratio(metric)
    if ratio is None:
        return "text-muted"
    return "success" if ratio < 0.5 else "warning" if ratio < 0.9 else "error"


class FleetLoaded(Message):
    def __init__(self, fleet: Fleet) -> None:
        super().__init__()
        self.fleet = fleet


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
        self, loader: Loader | None = None, url: str | None = None, interval: float = REFRESH_S
    ) -> None:
        """`loader` replaces Prometheus (a saved /metrics, tests); `url` overrides the app's setting."""
        super().__init__()
        self._loader = loader
        self._url = url
        self.interval = interval
        self.fleet: Fleet | None = None
        self.metric = 0
        self.sort = 0
        self.job = 0
        self.filter = ""
        self._styles: dict[str, Style] = {}

    # -- layout -------------------------------------------------------------------------------
    def compose_body(self) -> ComposeResult:
        yield Static("", id="fleet-banner", markup=False)
        yield Static("", id="fleet-status", markup=False)
        yield Input(
            placeholder="filter hosts (name, state or flag); Enter keeps, Esc clears", id="fleet-filter"
        )
        yield HostGrid(self._cells, id="fleet-hosts")

    def on_mount(self) -> None:
        self._styles = self._theme_styles()
        if self._loader is None:
            self._url = self._url or prometheus_url(getattr(self.app, "prometheus", None))
        if self._loader is None and self._url is None:
            self._banner([f"No Prometheus server: start with `gaudi-tui --prometheus URL` or set {ENV_VAR}."])
        self._status()
        self.set_interval(self.interval, self._tick)

    @property
    def client(self) -> PrometheusClient | None:
        try:
            return PrometheusClient(self._url) if self._url and self._loader is None else None
        except PrometheusError:
            return None

    # -- refresh ------------------------------------------------------------------------------
    def _tick(self) -> None:
        if self.is_current:
            self.refresh_fleet()

    def on_screen_resume(self) -> None:
        """Shown (first time or again): refresh, after the frame is drawn so it stays light."""
        self.call_after_refresh(self.refresh_fleet)

    def action_refresh_now(self) -> None:
        self.refresh_fleet()

    def _load(self) -> Fleet | None:
        if self._loader is not None:
            return self._loader()
        if self._url is None:
            return None
        try:
            return fetch.refresh(PrometheusClient(self._url))
        except PrometheusError as error:  # a URL that is not http(s)
            return Fleet(self._url, problems=(str(error),))

    @work(thread=True, exclusive=True, group="fleet", exit_on_error=False, description="fleet refresh")
    def refresh_fleet(self) -> None:
        fleet = self._load()
        if fleet is not None:
            self.post_message(FleetLoaded(fleet))

    def on_fleet_loaded(self, message: FleetLoaded) -> None:
        if message.fleet == self.fleet:
            return  # nothing changed: no redraw
        self.fleet = message.fleet
        self._banner(list(message.fleet.problems))
        self._draw()

    # -- drawing ------------------------------------------------------------------------------
    def _banner(self, lines: list[str]) -> None:
        banner = self.query_one("#fleet-banner", Static)
        banner.update("\n".join(f"⚠ {line}" for line in lines))
        banner.set_class(bool(lines), "shown")

    def _status(self) -> None:
        fleet = self.fleet
        parts = []
        if fleet is not None:
            cards = sum(len(h.cards) for h in fleet.hosts)
            free = sum(len(h.free_ids) for h in fleet.hosts)
            down = sum(h.state != "up" for h in fleet.hosts)
            parts.append(f"{len(fleet.hosts)} hosts · {cards} cards · {free} free · {down} down/stale")
            size = JOB_SIZES[self.job]
            fits = sum(h.fits(size) for h in fleet.hosts)
            if size > HOST_CARDS:
                need = -(-size // HOST_CARDS)
                verdict = "fits" if fits >= need else "does not fit"
                parts.append(
                    f"a {size}-card job needs {need} whole hosts with scale-out up: {fits} ready, {verdict}"
                )
            else:
                parts.append(f"a {size}-card job fits on {fits} host(s)")
        else:
            parts.append("waiting for the first refresh…")
        line2 = f"colour: {METRICS[self.metric][1]} · sort: {SORTS[self.sort][0]}"
        if self.filter:
            line2 += f" · filter: {self.filter}"
        if fleet is not None:
            line2 += f" · from {fleet.source}"
        self.query_one("#fleet-status", Static).update(" · ".join(parts) + "\n" + line2)

    def _theme_styles(self) -> dict[str, Style]:
        """Rich styles from the theme's $success/$warning/$error (muted = dim)."""
        colours = self.app.get_css_variables()
        styles: dict[str, Style] = {
            name: Style(color=Color.parse(colours[name]).rich_color, bold=name == "error")
            for name in ("success", "warning", "error")
            if name in colours
        }
        return {"text-muted": Style(dim=True), **styles}

    def _cards_cell(self, host: Host) -> Text:
        styles = self._styles
        if host.state == "down":
            return Text("target down", style=styles["error"])
        metric = METRICS[self.metric][0]
        text = Text()
        for card in host.cards:
            text.append(card_text(card, metric), style=styles[level(card, metric)])
            text.append(" ")
        missing = host.usual_cards - len(host.cards)
        if missing > 0:
            text.append("  ?" * missing, style=styles["error"])
        return text

    def _cells(self, host: Host) -> tuple[Text, ...]:
        """One host row (built only when the row is on screen)."""
        styles, size = self._styles, JOB_SIZES[self.job]
        fits = host.fits(size)
        return (
            Text(host.name),
            Text(host.state, style=styles["success"] if host.state == "up" else styles["error"]),
            self._cards_cell(host),
            Text(str(len(host.free_ids))),
            Text(f"{size}:{'✓' if fits else '—'}", style=styles["success"] if fits else styles["text-muted"]),
            Text(
                ", ".join(host.flags) or "ok", style=styles["error"] if host.flags else styles["text-muted"]
            ),
        )

    def _draw(self) -> None:
        self._status()
        if self.fleet is None:
            return
        self._styles = self._theme_styles()  # the theme may have changed
        hosts = SORTS[self.sort][1](list(self.fleet.hosts))
        if self.filter:
            needle = self.filter.lower()
            hosts = [h for h in hosts if needle in " ".join((h.name, h.state, *h.flags)).lower()]
        self.query_one(HostGrid).show(hosts)

    # -- keys ---------------------------------------------------------------------------------
    def action_cycle_metric(self) -> None:
        self.metric = (self.metric + 1) % len(METRICS)
        self._draw()

    def action_cycle_sort(self) -> None:
        self.sort = (self.sort + 1) % len(SORTS)
        self._draw()

    def action_cycle_job(self) -> None:
        self.job = (self.job + 1) % len(JOB_SIZES)
        self._draw()

    def action_filter(self) -> None:
        box = self.query_one("#fleet-filter", Input)
        box.add_class("shown")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter = event.value.strip()
        self._draw()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._close_filter(keep=True)

    def on_key(self, event: events.Key) -> None:
        box = self.query_one("#fleet-filter", Input)
        if event.key == "escape" and box.has_focus:
            event.stop()
            box.value = ""
            self._close_filter(keep=False)

    def _close_filter(self, keep: bool) -> None:
        box = self.query_one("#fleet-filter", Input)
        box.set_class(keep and bool(box.value), "shown")
        self.query_one(HostGrid).focus()

    def on_host_grid_selected(self, event: HostGrid.Selected) -> None:
        event.stop()
        self.app.push_screen(HostScreen(event.host, self.client))
