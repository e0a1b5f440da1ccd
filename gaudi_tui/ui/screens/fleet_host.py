"""One fleet host's cards, with 5-minute sparklines from one Prometheus `query_range` (Esc closes)."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from gaudi_tui.core.fleet import fetch
from gaudi_tui.core.fleet import metrics as m
from gaudi_tui.core.fleet.model import JOB_SIZES, Card, Host
from gaudi_tui.core.fleet.prometheus import PrometheusClient, PrometheusError, Series
from gaudi_tui.ui.widgets.measured_table import MeasuredTable
from gaudi_tui.ui.widgets.sparkline_text import spark

SPARK = 8
POINTS = fetch.HISTORY_S // fetch.HISTORY_STEP_S + 1
History = dict[tuple[str, int], Series]


def _num(value: float | None, scale: float = 1.0, digits: int = 0) -> str:
    return "—" if value is None else f"{value / scale:.{digits}f}"


class HistoryLoaded(Message):
    def __init__(self, history: History | None, problem: str | None) -> None:
        super().__init__()
        self.history, self.problem = history, problem


class HostScreen(Screen[None]):
    DEFAULT_CSS = """
    HostScreen #host-title { height: auto; padding: 0 1; text-style: bold; }
    HostScreen #host-note { height: auto; padding: 0 1; color: $text-muted; }
    HostScreen #host-ports-down { height: auto; padding: 0 1; color: $text-error; text-style: bold; }
    HostScreen #host-cards { height: 1fr; }
    """
    BINDINGS = [Binding("escape,backspace", "app.pop_screen", "Back", id="fleet.host.back")]

    def __init__(self, host: Host, client: PrometheusClient | None) -> None:
        super().__init__()
        self.host = host
        self.client = client
        self.history: History = {}

    def compose(self) -> ComposeResult:
        host = self.host
        fits = ", ".join(str(n) for n in JOB_SIZES if host.fits(n)) or "none"
        free = ",".join(str(i) for i in host.free_ids) or "none"
        yield Static(
            f"{host.name} · {host.state} · job {host.job or '?'} · {len(host.cards)}/{host.usual_cards} cards"
            f" · free {free} · job sizes that fit: {fits}",
            id="host-title",
            markup=False,
        )
        yield Static("", id="host-note", markup=False)
        if down := host.down_ports():
            yield Static(
                "Scale-out ports down (multi-node jobs using these cards fail): " + "; ".join(down),
                id="host-ports-down",
                markup=False,
            )
        yield MeasuredTable(id="host-cards", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("id", "util%", "util 5m", "HBM GiB", "power W", "power 5m", "°C", "°C 5m", "flags")
        self._draw()
        if self.client is None:
            self._note("No history: this fleet was not read from Prometheus.")
        else:
            self._note("Loading the last 5 minutes…")
            self.load_history(self.client)

    def _note(self, text: str) -> None:
        self.query_one("#host-note", Static).update(text)

    @work(thread=True, exclusive=True, exit_on_error=False, description="host history")
    def load_history(self, client: PrometheusClient) -> None:
        try:
            self.post_message(HistoryLoaded(fetch.history(client, self.host.name), None))
        except PrometheusError as error:
            self.post_message(HistoryLoaded(None, str(error)))

    def on_history_loaded(self, message: HistoryLoaded) -> None:
        if message.history is None:
            self._note(f"No history: {message.problem}")
            return
        self.history = message.history
        self._note("Sparklines: the last 5 minutes from Prometheus, left to right (one point per 10 s).")
        self._draw()

    def _spark(self, metric: str, card: Card, top: float | None) -> str:
        series = self.history.get((metric, card.id))
        return spark([v for _, v in series.points], SPARK, POINTS, top) if series else ""

    def _draw(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        gib = 1024**3
        for card in self.host.cards:
            table.add_row(
                str(card.id),
                _num(card.utilization_pct),
                self._spark(m.UTILIZATION.name, card, 100),
                f"{_num(card.memory_used_bytes, gib)}/{_num(card.memory_total_bytes, gib)}",
                f"{_num(card.power_mw, 1000)}/{_num(card.power_limit_mw, 1000)}",
                self._spark(m.POWER.name, card, card.power_limit_mw),
                _num(card.temperature_c),
                self._spark(m.TEMP_ONCHIP.name, card, card.slowdown_c),
                Text(", ".join(card.flags) or "ok", style="bold" if card.flags else ""),
            )
