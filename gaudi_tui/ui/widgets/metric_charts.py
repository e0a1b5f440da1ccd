"""Four live charts of a training job: loss (raw and smoothed), learning rate, grad norm, throughput."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Grid
from textual_plotext import PlotextPlot

from gaudi_tui.core.jobs.monitor import LogPoint, series, smooth
from gaudi_tui.ui.palette import palette

RGB = tuple[int, int, int]

MAX_POINTS = 400
"""Points drawn per line; longer histories are thinned evenly (the last point is always kept)."""


def thin(xs: list[float], ys: list[float], limit: int = MAX_POINTS) -> tuple[list[float], list[float]]:
    if len(xs) <= limit:
        return xs, ys
    stride = len(xs) / limit
    picks = sorted({int(i * stride) for i in range(limit)} | {len(xs) - 1})
    return [xs[i] for i in picks], [ys[i] for i in picks]


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:.3g}" if abs(value) < 0.01 else f"{value:.4g}"


class MetricCharts(Grid):
    DEFAULT_CSS = """
    MetricCharts { grid-size: 2 2; grid-gutter: 0 1; height: 1fr; min-height: 8; }
    MetricCharts > PlotextPlot { height: 1fr; min-height: 4; }
    """

    def compose(self) -> ComposeResult:
        for name in ("loss", "lr", "grad", "speed"):
            yield PlotextPlot(id=f"chart-{name}")

    def on_mount(self) -> None:
        self.show(())

    def show(self, points: Sequence[LogPoint], evals: Sequence[tuple[int, float]] = ()) -> None:
        """Redraw every chart from the job's log points and (step, eval_loss) pairs."""
        colours = palette(self.app)
        xs, loss = series(points, "loss")
        smoothed = smooth(loss)
        lines = [(xs, loss, colours.rgb(colours.muted)), (xs, smoothed, colours.rgb(colours.accent))]
        head = f"loss {_fmt(loss[-1])} (smoothed {_fmt(smoothed[-1])})" if loss else ""
        if evals:
            lines.append(([float(s) for s, _ in evals], [v for _, v in evals], colours.rgb(colours.error)))
            head += f" · eval {_fmt(evals[-1][1])}"
        self._draw("loss", "loss", lines, head)
        self._single("lr", "learning rate", *series(points, "learning_rate"), colours.rgb(colours.warning))
        self._single("grad", "grad norm", *series(points, "grad_norm"), colours.rgb(colours.secondary))
        _, tokens = series(points, "tokens_per_s")
        extra = f" · {_fmt(tokens[-1])} tok/s" if tokens else ""
        self._single(
            "speed", "samples/s", *series(points, "samples_per_s"), colours.rgb(colours.success), extra
        )

    def _single(
        self, name: str, title: str, xs: list[float], ys: list[float], color: RGB, extra: str = ""
    ) -> None:
        self._draw(name, title, [(xs, ys, color)], f"{title} {_fmt(ys[-1])}{extra}" if ys else "")

    def _draw(
        self, name: str, title: str, lines: list[tuple[list[float], list[float], RGB]], head: str
    ) -> None:
        plot = self.query_one(f"#chart-{name}", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        if head:
            plt.title(head)
            for xs, ys, color in lines:
                px, py = thin(xs, ys)
                plt.plot(px, py, color=color, marker="braille")
        else:
            plt.title(f"{title}: no data yet")
        plot.refresh()
