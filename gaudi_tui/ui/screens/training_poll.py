"""The Training screen's poll of the run folders (on its worker thread): only what changed.

A poll posts the rows that changed (every row at the first poll and when a run appeared), the
selected job's new log lines, its details when they changed, and its charts when new points came;
a poll that changed nothing posts nothing. The charts come from a `ChartSeries` of the selected run
only, read once and extended as lines arrive; a long history loads in slices, the charts redrawn
every CHART_EVERY_S meanwhile. A settled run's details text is made once. The selected job is not
read while `detail` is false (its panes are not mounted yet), its history not while `history` is
false (the screen's list is not drawn yet: a slice would hold the interpreter the first frame needs).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from textual.message import Message

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.monitor import JobView, Monitor
from gaudi_tui.core.jobs.series import ChartData, ChartSeries
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.tailing import LogTail

log = logging.getLogger(__name__)
POLL_S = 0.5
IDLE_POLL_S = 1.0
"""After a poll that found nothing new (every run ended, say), the next one comes after this long:
a run started elsewhere shows within it, and then the list is polled every POLL_S again."""
LOG_LINES = 1000
LOG_LINES_PER_POLL = 400
"""A flooding job shows its newest lines only: one poll never writes more than this many."""
NODES_EVERY_S = 5.0
"""How often the selected Ray job's cluster nodes are fetched for the Details pane."""
CHART_EVERY_S = 2.0
"""While a long history loads, the charts are redrawn this often (and once it is read)."""

Describe = Callable[[JobView, runfolder.RunFolder, JobSpec | None, str], str]


@dataclass(frozen=True)
class Detail:
    """What the selected job's panes need from one poll."""

    run_id: str
    charts: ChartData | None
    """None when unchanged since the previous poll."""
    new_lines: tuple[str, ...]
    reset_log: bool
    text: str


class JobsPolled(Message):
    """The rows that changed since the last message; every row's id, in order, when runs appeared."""

    def __init__(self, changed: list[JobView], order: list[str] | None, detail: Detail | None) -> None:
        super().__init__()
        self.changed = changed
        self.order = order
        self.detail = detail


class JobsPoller:
    """The state kept between polls: the monitor, the rows sent, the selected job's readers."""

    def __init__(self, describe: Describe, nodes_of: Callable[[runfolder.RunFolder], str]) -> None:
        self.monitor = Monitor()
        self.describe, self.nodes_of = describe, nodes_of
        self.sent: dict[str, JobView] = {}
        self.polled = False
        self.wait_s = POLL_S
        """How long to wait before the next poll."""
        self.failing: set[str] = set()
        """What raised and was logged (the list, or `run ID`'s panes)."""
        self.broken: tuple[str, str] | None = None
        """The run whose panes raised, and the Details text that said so."""
        self.tail: LogTail | None = None
        self.charts: ChartSeries | None = None
        self.charts_drawn = 0.0
        self.text = ""
        self.nodes: tuple[str | None, float, str] = (None, 0.0, "")
        self.described: tuple[JobView | None, str, str] = (None, "", "")
        """The row and nodes the details text was made of, and the text (a settled row's is made once)."""

    @property
    def loading(self) -> bool:
        """The selected job's history is still being read."""
        return self.charts is not None and self.charts.behind > 0

    def poll(self, selected: str | None, history: bool = True, detail: bool = True) -> JobsPolled | None:
        """What changed (the first poll: every row, none or many); the selected job's panes are read
        only when `detail` is true, its chart history only when `history` is true too."""
        try:
            views = self.monitor.poll(eager=selected)  # a run that raises is its row's error (Monitor)
        except Exception:  # the runs folder or the index: log it once, keep polling
            self._failed("the job list")
            self.wait_s = IDLE_POLL_S
            return None
        first, self.polled = not self.polled, True
        order = [v.id for v in views] if first or len(views) != len(self.sent) else None
        changed = [v for v in views if self.sent.get(v.id) is not v]  # a settled row is the same object
        self.sent.update((v.id, v) for v in changed)
        selected = selected or (views[-1].id if views else None)
        watcher = self.monitor.watchers.get(selected) if selected and detail else None
        shown = None
        if watcher is not None:
            try:
                shown = self._detail(self.sent[watcher.run.id], watcher.run, watcher.load_spec(), history)
                self.broken = None
            except Exception as exc:  # one run's panes: said in its Details, the list goes on
                shown = self._broken_detail(watcher.run.id, exc)
        busy = bool(changed or order is not None or shown is not None)
        self.wait_s = POLL_S if busy else IDLE_POLL_S
        return JobsPolled(changed, order, shown) if busy else None

    def _failed(self, what: str) -> None:
        """Log what raised, once while it keeps raising (`failing`)."""
        if what not in self.failing:
            self.failing.add(what)
            log.exception("Training poll: cannot read %s", what)

    def _broken_detail(self, run_id: str, exc: Exception) -> Detail | None:
        """The Details of a run whose panes raised: why, once (None while it says the same)."""
        self._failed(f"run {run_id}")
        text = f"Cannot read this run's details: {type(exc).__name__}: {exc}"[:500]
        if (run_id, text) == self.broken:
            return None
        self.broken, self.text = (run_id, text), text  # a details text that reads again is posted
        return Detail(run_id=run_id, charts=None, new_lines=(), reset_log=False, text=text)

    def _detail(
        self, view: JobView, run: runfolder.RunFolder, spec: JobSpec | None, history: bool
    ) -> Detail | None:
        reset = self.charts is None or self.charts.path != run.metrics_path
        if reset or self.tail is None or self.charts is None:
            self.tail = LogTail(run.log_path, max_lines=LOG_LINES)
            self.charts, self.charts_drawn, self.text = ChartSeries(run.metrics_path), 0.0, ""
        new_lines = self.tail.poll()
        # The list first, then the history: read once the list may be drawn (`history`), from the
        # selected run's first poll on (a poll's wait between would hold the charts POLL_S back).
        grew = history and self.charts.poll()
        now = time.monotonic()
        draw = grew and (not self.charts.behind or now - self.charts_drawn >= CHART_EVERY_S)
        if view.where and (self.nodes[0] != view.id or now - self.nodes[1] > NODES_EVERY_S):
            self.nodes = (view.id, now, self.nodes_of(run))
        nodes = self.nodes[2] if self.nodes[0] == view.id else ""
        if self.described[0] is not view or self.described[1] != nodes:  # a settled row is the same object
            self.described = (view, nodes, self.describe(view, run, spec, nodes))
        text = self.described[2]
        if not (reset or draw or new_lines or text != self.text):
            return None
        self.text = text
        if draw:
            self.charts_drawn = now
        return Detail(
            run_id=view.id,
            charts=self.charts.data() if draw or reset else None,
            new_lines=tuple(new_lines[-LOG_LINES_PER_POLL:]),
            reset_log=reset,
            text=text,
        )
