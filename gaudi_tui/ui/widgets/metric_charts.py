"""Four live charts of a training job: loss (raw and smoothed), learning rate, grad norm, throughput.

They draw `ChartData`: bounded lines that keep each stretch's lowest and highest point
(core/jobs/series.py), so a run of a million steps draws as fast as one of a hundred.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.containers import Grid
from textual_plotext import PlotextPlot

from gaudi_tui.core.jobs.series import ChartData
from gaudi_tui.ui.palette import palette

RGB = tuple[int, int, int]
Line = tuple[tuple[float, ...], tuple[float, ...]]
NO_LINE: Line = ((), ())


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:.3g}" if abs(value) < 0.01 else f"{value:.4g}"


class Chart(PlotextPlot):
    """A plot that shows only its title while it has no data: an empty plot costs as much to build
    as a full one, and a screen of four of them delayed the job list's first frame."""

    placeholder: str | None = None

    def render(self) -> RenderResult:
        if self.placeholder is not None:
            return Text(self.placeholder, justify="center", style="dim")
        return super().render()


class MetricCharts(Grid):
    DEFAULT_CSS = """
    MetricCharts { grid-size: 2 2; grid-gutter: 0 1; height: 1fr; min-height: 8; }
    MetricCharts > Chart { height: 1fr; min-height: 4; }
    """

    def compose(self) -> ComposeResult:
        for name in ("loss", "lr", "grad", "speed"):
            yield Chart(id=f"chart-{name}")

    def on_mount(self) -> None:
        self.show(None)

    def show(self, data: ChartData | None) -> None:
        """Redraw every chart from the job's downsampled lines (None: no job, nothing yet)."""
        colours = palette(self.app)
        lines = data.lines if data is not None else {}
        latest = data.latest if data is not None else {}
        loading = f" (reading its history: {data.read:.0%})" if data is not None and data.read < 1 else ""
        drawn = [
            (lines.get("loss", NO_LINE), colours.rgb(colours.muted)),
            (lines.get("smoothed", NO_LINE), colours.rgb(colours.accent)),
        ]
        head = (
            f"loss {_fmt(latest['loss'])} (smoothed {_fmt(latest['smoothed'])})" if "loss" in latest else ""
        )
        if "eval" in latest:
            drawn.append((lines["eval"], colours.rgb(colours.error)))
            head += f" · eval {_fmt(latest['eval'])}"
        self._draw("loss", "loss", drawn, head + loading if head else "")
        self._single("lr", "learning rate", lines, latest, "learning_rate", colours.rgb(colours.warning))
        self._single("grad", "grad norm", lines, latest, "grad_norm", colours.rgb(colours.secondary))
        extra = f" · {_fmt(latest['tokens_per_s'])} tok/s" if "tokens_per_s" in latest else ""
        self._single(
            "speed", "samples/s", lines, latest, "samples_per_s", colours.rgb(colours.success), extra
        )

    def _single(
        self,
        name: str,
        title: str,
        lines: dict[str, Line],
        latest: dict[str, float],
        key: str,
        color: RGB,
        extra: str = "",
    ) -> None:
        head = f"{title} {_fmt(latest[key])}{extra}" if key in latest else ""
        self._draw(name, title, [(lines.get(key, NO_LINE), color)], head)

    def _draw(self, name: str, title: str, lines: list[tuple[Line, RGB]], head: str) -> None:
        plot = self.query_one(f"#chart-{name}", Chart)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(head or f"{title}: no data yet")
        plot.placeholder = None if head else f"{title}: no data yet"
        for (xs, ys), color in lines if head else ():
            if xs:
                plt.plot(list(xs), list(ys), color=color, marker="braille")
        plot.refresh()
