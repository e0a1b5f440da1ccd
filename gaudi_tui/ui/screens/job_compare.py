"""Training · compare: the runs marked on the Training screen, side by side.

Their loss, learning rate, throughput, compiles and memory overlaid on shared step axes (each run
its own colour, named in the legend), the fields that differ between them (`a`: every field),
their final figures, and why each was slow (`compare_why.py`: recompiles, input wait, top op, Gaudi's
graphs). The run folders are read once, off the UI thread (core/jobs/compare.py).

The charts share one grid on a screen tall enough that each keeps `MIN_CHART_ROWS` rows
(`GRID_FROM_ROWS`); on a shorter one (80×24, 100×30) one chart is shown at a time, as tall as the
table and the diff leave, and `n` (in the footer) shows the next.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.message import Message
from textual.widgets import DataTable, Static

from gaudi_tui.core.jobs import compare as compare_mod
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.compare import Comparison, RunSide
from gaudi_tui.ui.palette import Palette, palette
from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.widgets.metric_charts import Chart

RGB = tuple[int, int, int]
TITLES = {
    "loss": "loss",
    "learning_rate": "learning rate",
    "throughput": "throughput",
    "compiles": "graph compiles",
    "memory": "memory (MiB)",
}
"""Each chart's title; their x axis is the step."""
NONE = {"compiles": "none (the Gaudi runtime counts them: Gaudi runs only)"}
MIN_CHART_ROWS = 6
GRID_FROM_ROWS = 36
"""From this many terminal rows the five charts share a grid (two rows of charts of at least
`MIN_CHART_ROWS` each, beside a full final table and the diff); below it, one chart at a time."""
NAME_WIDTH = 24
MIN_VALUE_WIDTH = 16
EXTRA_COLOURS: tuple[RGB, ...] = ((230, 140, 40), (120, 170, 255), (200, 120, 200), (140, 200, 120))
"""After the theme's five: for a sixth run and more."""


@dataclass
class Compared(Message):
    comparison: Comparison | None
    error: str | None = None


def run_colours(colours: Palette, count: int) -> list[RGB]:
    """One colour a run: the theme's accent, warning, success, secondary, error, then fixed ones."""
    styles = (colours.accent, colours.warning, colours.success, colours.secondary, colours.error)
    every = [colours.rgb(s) for s in styles] + list(EXTRA_COLOURS)
    return [every[i % len(every)] for i in range(count)]


def legend(run: RunSide, rgb: RGB) -> Text:
    """A run's name in its colour, as the charts draw it."""
    return Text.assemble(("━━ ", "rgb({},{},{})".format(*rgb)), (run.label, "bold"))


class JobCompareScreen(PanelScreen):
    TITLE = "Training · compare"
    HELP = (
        "The runs you marked on Training (m), side by side: loss, learning rate, throughput, graph "
        "compiles and memory overlaid by step, each run in its own colour; why each was slow (torch.compile's "
        "recompiles and recompile_limit, the input wait, the last profile's top op, Gaudi's graph "
        "compiles); the settings that differ "
        "(spec fields, the command's arguments, environment with secrets masked, accelerator, world "
        "size, nodes); and each run's final figures. On a short terminal one chart shows at a time: n "
        "shows the next. a shows every field, Esc goes back. Headless: "
        "gaudi-tui jobs compare A B … [--json], gaudi-tui jobs export ID … --csv|--parquet FILE."
    )
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="job_compare.back"),
        Binding("a", "toggle_all", "All fields", id="job_compare.all"),
        Binding("n", "next_chart", "Next chart", id="job_compare.next_chart"),
    ]
    DEFAULT_CSS = """
    JobCompareScreen #compare-status { height: auto; padding: 0 1; color: $text-muted; }
    JobCompareScreen #compare-final { height: auto; max-height: 8; }
    JobCompareScreen #compare-why { height: auto; max-height: 5; }
    JobCompareScreen #compare-charts { grid-size: 3 2; grid-gutter: 0 1; height: 2fr; min-height: 12; }
    JobCompareScreen #compare-charts > Chart { height: 1fr; min-height: 6; }
    JobCompareScreen #compare-memory { column-span: 2; }
    JobCompareScreen #compare-charts.-one { layout: vertical; min-height: 6; }
    JobCompareScreen #compare-charts.-one > Chart { display: none; }
    JobCompareScreen #compare-charts.-one > Chart.-shown { display: block; }
    JobCompareScreen #compare-diff { height: 1fr; min-height: 4; }
    """

    def __init__(self, run_ids: list[str]) -> None:
        super().__init__()
        self.run_ids = run_ids
        self.everything = False
        self.comparison: Comparison | None = None
        self.shown = 0
        """The chart shown when one shows at a time (an index into compare.CHARTS)."""

    def compose_body(self) -> ComposeResult:
        yield Static(f"Reading {len(self.run_ids)} runs…", id="compare-status", markup=False)
        yield DataTable[str | Text](id="compare-final", cursor_type="none")  # the legend too
        yield DataTable[str](id="compare-why", cursor_type="none")
        with Grid(id="compare-charts"):
            for name in compare_mod.CHARTS:
                yield Chart(id=f"compare-{name}")
        yield DataTable[str](id="compare-diff", zebra_stripes=True, cursor_type="row")

    def on_mount(self) -> None:
        for name in compare_mod.CHARTS:
            self.query_one(f"#compare-{name}", Chart).placeholder = f"{TITLES[name]}: reading…"
        self._fit(self.app.size.height)
        self.load()

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.height)

    def _fit(self, rows: int) -> None:
        """The grid where each chart keeps its rows, else one chart at a time."""
        found = self.query("#compare-charts")
        if not found:
            return  # a resize before the body mounted: on_mount fits it
        charts = found.first(Grid)
        one = rows < GRID_FROM_ROWS
        if charts.has_class("-one") != one:
            charts.set_class(one, "-one")
            self.refresh_bindings()
        self._show_chart()

    def _show_chart(self) -> None:
        for i, name in enumerate(compare_mod.CHARTS):
            self.query_one(f"#compare-{name}", Chart).set_class(i == self.shown, "-shown")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`n` only where one chart shows at a time."""
        if action == "next_chart":
            charts = self.query("#compare-charts")  # asked before the body mounts too
            return bool(charts) and charts.first().has_class("-one")
        return True

    def action_next_chart(self) -> None:
        self.shown = (self.shown + 1) % len(compare_mod.CHARTS)
        self._show_chart()

    @work(thread=True, exclusive=True, exit_on_error=False, group="job-compare", description="compare runs")
    def load(self) -> None:
        try:
            runs = [runfolder.find(run_id) for run_id in self.run_ids]
            found = compare_mod.compare(runs, everything=True)
        except (OSError, ValueError, runfolder.RunNotFound) as exc:
            self.post_message(Compared(None, f"cannot compare: {exc}"))
            return
        self.post_message(Compared(found))

    def on_compared(self, message: Compared) -> None:
        status = self.query_one("#compare-status", Static)
        if message.comparison is None:
            status.update(message.error or "cannot compare")
            return
        status.display = False
        self.comparison = message.comparison
        runs = message.comparison.runs
        colours = run_colours(palette(self.app), len(runs))
        for name in compare_mod.CHARTS:
            self._chart(name, runs, colours)
        self._show_diff()
        self._show_final(colours)
        self._show_why()

    def _chart(self, name: str, runs: list[RunSide], colours: list[RGB]) -> None:
        plot = self.query_one(f"#compare-{name}", Chart)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        drawn = [(run.lines[name], rgb) for run, rgb in zip(runs, colours, strict=True) if run.lines[name][0]]
        title = TITLES[name]
        if name == "throughput":  # one unit for all (compare.in_one_unit)
            title = runs[0].throughput_unit
        plot.placeholder = None if drawn else f"{title}: {NONE.get(name, 'none of these runs logs it')}"
        plt.title(title)
        for (xs, ys), rgb in drawn:
            plt.plot(list(xs), list(ys), color=rgb, marker="braille")
        plot.refresh()

    def _show_diff(self) -> None:
        if self.comparison is None:
            return
        table = self.query_one("#compare-diff", DataTable)
        table.clear(columns=True)
        runs = self.comparison.runs
        rows = compare_mod.differences(runs, self.everything)
        names = min(NAME_WIDTH, max((len(name) for name, _ in rows), default=8))
        # each run's column gets a share of the width; a longer value (the arguments) wraps
        share = max(MIN_VALUE_WIDTH, (self.size.width - names - 2 * (len(runs) + 1) - 2) // len(runs))
        table.add_column("differs" if not self.everything else "field", key="field", width=names)
        for i, run in enumerate(runs):
            table.add_column(
                Text(run.label), key=f"run-{i}", width=share
            )  # str is markup; names are anyone's
        if not rows:
            table.add_row("(no field differs: a shows all)", *([""] * len(runs)))
        for name, values in rows:
            table.add_row(Text(name), *map(Text, values), key=name, height=None)

    def _show_final(self, colours: list[RGB]) -> None:
        """One row a run, named in its colour: the charts' legend and the final figures."""
        if self.comparison is None:
            return
        table = self.query_one("#compare-final", DataTable)
        figures = compare_mod.final_table(self.comparison.runs)
        for title in figures.header:
            table.add_column(title, key=title)
        for i, (run, row) in enumerate(zip(self.comparison.runs, figures.rows, strict=True)):
            table.add_row(legend(run, colours[i]), *map(Text, row[1:]), key=run.id)

    def _show_why(self) -> None:
        """Why each run was slow: one row a figure, one column a run (compare_why.py)."""
        if self.comparison is None:
            return
        table = self.query_one("#compare-why", DataTable)
        why = compare_mod.why_table(self.comparison.runs)
        table.add_column(why.header[0], key="why")
        for i, label in enumerate(why.header[1:]):
            table.add_column(Text(label), key=f"run-{i}")  # str is markup; names are anyone's
        for row in why.rows:
            table.add_row(*map(Text, row), key=row[0])

    def action_toggle_all(self) -> None:
        self.everything = not self.everything
        self._show_diff()
        self.notify("Every field." if self.everything else "Only the fields that differ.")
