"""The Training screen's insight: the findings and figures in Details (`InsightPanel`), and Gaudi's
graph compiles by step beside the loss in Charts (`CompilesChart`). The panel shows torch's own
figures (torch.compile's frames, the input wait) on every accelerator, and stays hidden for a job
with neither those nor Gaudi runtime metrics; the chart is Gaudi's only.

`InsightPanel` follows the screen's selected job on its own: every `POLL_S` a thread worker polls an
`InsightWatcher` (bounded reads, see core/jobs/insight/report.py) and the result is drawn here. An
ended run whose files and status.json did not change since its insight was drawn is not worked out
and drawn again (a panel left on a finished run stays idle).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

from textual import work
from textual.widgets import Static
from textual_plotext import PlotextPlot

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.insight import text
from gaudi_tui.core.jobs.insight.report import Insight, InsightWatcher
from gaudi_tui.core.jobs.liveness import current
from gaudi_tui.core.jobs.status import TERMINAL
from gaudi_tui.ui.palette import palette

log = logging.getLogger(__name__)
POLL_S = 1.0
MAX_RANK_LINES = 4


def status_stamp(run: runfolder.RunFolder) -> tuple[int, int] | None:
    try:
        stat = os.stat(run.status_path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def ended(run: runfolder.RunFolder) -> bool:
    status = run.status()
    return status is not None and current(run.status_path, status, time.time())[1] in TERMINAL


def relevant(insight: Insight) -> bool:
    """Gaudi's runtime figures, or torch's own (compiles, input wait) on any accelerator."""
    return (
        insight.device == "hpu"
        or insight.files_found
        or bool(insight.graphs_by_rank)
        or bool(insight.torch_lines)
    )


def gaudi(insight: Insight) -> bool:
    return insight.device == "hpu" or insight.files_found or bool(insight.graphs_by_rank)


class CompilesChart(PlotextPlot):
    DEFAULT_CSS = "CompilesChart { height: 9; display: none; }"

    def show(self, insight: Insight) -> None:
        series = {r: s for r, s in insight.graphs_by_rank.items() if any(g is not None for g in s)}
        self.display = bool(series) and gaudi(insight)
        if not self.display:
            return
        colours = palette(self.app)
        cycle = (colours.accent, colours.warning, colours.secondary, colours.success)
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        for i, (rank, graphs) in enumerate(list(series.items())[:MAX_RANK_LINES]):
            pairs = [
                (float(s), float(g)) for s, g in zip(insight.steps, graphs, strict=False) if g is not None
            ]
            label = f"rank {rank}" if len(series) > 1 else None
            plt.plot([x for x, _ in pairs], [y for _, y in pairs], color=colours.rgb(cycle[i % 4]),
                     marker="braille", label=label)  # fmt: skip
        plt.vline(insight.warmup_end, color=colours.rgb(colours.muted))
        after = [v.after_warmup_graphs for v in insight.ranks if v.after_warmup_graphs is not None]
        latest = max((v.graphs for v in insight.ranks if v.graphs is not None), default=0)
        head = f"graph compiles {latest}" + (f" ({max(after)} after warm-up)" if after else "")
        plt.title(head)
        self.refresh()


class InsightPanel(Static):
    DEFAULT_CSS = "InsightPanel { display: none; margin-bottom: 1; }"

    def __init__(self, selected: Callable[[], str | None], ready: Callable[[], bool] = lambda: True) -> None:
        super().__init__("", markup=False)
        self.selected = selected
        """The job to show: the screen's selected one (asked at every poll)."""
        self.ready = ready
        """Whether to poll yet (the Training screen: once its list is drawn; a long history's first
        read would hold the interpreter the list's first frame needs)."""
        self.run_id: str | None = None
        self._watcher: InsightWatcher | None = None
        self._lock = threading.Lock()
        self.drawn_ended: tuple[str, tuple[int, int] | None] | None = None
        """The ended run whose insight is drawn, and its status.json's stamp then (under the lock)."""
        self.polls = self.worked_out = 0
        """How many polls ran, and how many of them worked an insight out (the tests count them)."""
        self.failure: tuple[str, str] | None = None
        """The run whose reading raised at the last poll, and what the panel says of it."""

    def on_mount(self) -> None:
        self.set_interval(POLL_S, self._tick)

    def _tick(self) -> None:
        run_id = self.selected()
        if run_id != self.run_id:
            self.run_id, self.display = run_id, False
        if run_id is not None and self.screen.is_current and self.ready():
            self._poll(run_id)

    @work(thread=True, exclusive=True, exit_on_error=False, group="insight", description="Gaudi insight")
    def _poll(self, run_id: str) -> None:
        if not self._lock.acquire(blocking=False):
            return  # the previous poll still reads (a large file's first read): this tick is skipped
        try:
            if self._watcher is None or self._watcher.run.id != run_id:
                self._watcher = InsightWatcher(runfolder.RunFolder(runfolder.runs_dir() / run_id))
            self.polls += 1
            read = self._watcher.poll()
            stamp = status_stamp(self._watcher.run)
            if not read and self.drawn_ended == (run_id, stamp):
                return  # an ended run, nothing new: what is drawn stands
            insight = self._watcher.insight()
            self.worked_out += 1
            self.drawn_ended = (run_id, stamp) if ended(self._watcher.run) else None
            self.failure = None
        except Exception as exc:  # one run's files must not silence the panel: said here, logged once
            self._failed(run_id, exc)
            return
        finally:
            self._lock.release()
        self.app.call_from_thread(self._show, run_id, insight)

    def _failed(self, run_id: str, exc: Exception) -> None:
        said = f"cannot read this run's runtime metrics: {type(exc).__name__}: {exc}"[:300]
        if self.failure == (run_id, said):
            return
        self.failure = (run_id, said)
        log.exception("insight: cannot read run %s", run_id)
        self.app.call_from_thread(self._show_failure, run_id, said)

    def _show_failure(self, run_id: str, said: str) -> None:
        if run_id == self.run_id:
            self.display = True
            self.update(f"Gaudi runtime\n{said}")

    def _show(self, run_id: str, insight: Insight) -> None:
        if run_id != self.run_id:
            return
        self.display = relevant(insight)
        if self.display:
            title = "Why slow: Gaudi runtime and torch" if gaudi(insight) else "Why slow: torch"
            self.update(title + "\n" + "\n".join(text.lines(insight)))
        for chart in self.screen.query(CompilesChart):
            chart.show(insight)
