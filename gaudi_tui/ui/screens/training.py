"""Training: launch Trainer jobs from a form and watch them live; jobs survive the panel.

The screen only reads run folders (a worker polls them), so quitting never touches a job, and a
new panel finds every job again. `s` asks for a graceful stop (STOP file), `k` kills (SIGTERM to
the launcher, SIGKILL to its workers after a grace), `r` resumes from the newest checkpoint, `P` asks for a profile (training_actions.py). `m`
marks runs and `C` opens the marked ones side by side (job_compare.py).
"""

from __future__ import annotations

import threading
from functools import partial

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.widgets import DataTable, Log, Static, TabbedContent, TabPane
from textual.worker import get_current_worker

from gaudi_tui.core.jobs.monitor import JobView, format_duration
from gaudi_tui.ui.screens.training_actions import JobActionsScreen
from gaudi_tui.ui.screens.training_details import cluster_nodes, details_text
from gaudi_tui.ui.screens.training_poll import LOG_LINES, JobsPolled, JobsPoller
from gaudi_tui.ui.widgets.insight_panel import CompilesChart, InsightPanel
from gaudi_tui.ui.widgets.metric_charts import MetricCharts

FIRST_ROWS = 50
PANES_AFTER_S = 0.1
"""The older rows are added, and the selected job's panes mount, this long after the list's first
rows (once that frame is out)."""
COLUMNS = ("Job", "State", "Elapsed", "Step", "ETA", "Loss")


def job_label(view: JobView) -> str:
    return f"{view.name} · {view.id[-4:]}"


class TrainingScreen(JobActionsScreen):
    TITLE = "Training"
    HELP = (
        "Launch Trainer jobs from the keyboard and watch them live; they survive the panel, SSH "
        "hang-ups and a killed panel. n new job (presets: demo fine-tune, LoRA, QLoRA), s graceful "
        "stop (one checkpoint at the same step on every rank), k kill (press twice), r resume from "
        "the newest complete checkpoint, P a profile of N steps from the running job (no restart; "
        "Details lists its top ops). Jobs run here or on a Ray cluster (target=ray in the form; "
        "Details shows the cluster's nodes; r re-attaches a Ray job whose supervisor died). "
        "m marks runs (●), C compares the marked runs side by side. "
        "Headless: gaudi-tui train / gaudi-tui jobs."
    )
    DEFAULT_CSS = """
    TrainingScreen #jobs { height: auto; max-height: 9; min-height: 3; }
    TrainingScreen #job-error { color: $error; height: auto; max-height: 2; display: none; }
    TrainingScreen #panes { height: 1fr; }
    TrainingScreen TabbedContent { height: 1fr; }
    TrainingScreen TabPane { padding: 0; }
    TrainingScreen #job-log { height: 1fr; }
    TrainingScreen #empty { color: $text-muted; padding: 0 1; }
    """
    BINDINGS = [
        Binding("n", "new_job", "New job", id="training.new"),
        Binding("s", "stop_job", "Stop", id="training.stop"),
        Binding("k", "kill_job", "Kill", id="training.kill"),
        Binding("r", "resume_job", "Resume", id="training.resume"),
        Binding("P", "profile_job", "Profile", id="training.profile", key_display="P"),
        Binding("c", "pane('charts')", "Charts", id="training.charts", show=False),  # on its tab
        Binding("l", "pane('log')", "Log", id="training.log", show=False),  # on its tab
        Binding("d", "pane('details')", "Details", id="training.details", show=False),  # on its tab
        Binding("t", "try_in_chat", "Try in Chat", id="training.try"),
        Binding("m", "mark_job", "Mark", id="training.mark"),
        Binding("C", "compare_jobs", "Compare", id="training.compare", key_display="C"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.views: dict[str, JobView] = {}
        self.marked: list[str] = []
        self._rows_shown = 0
        self._awake = threading.Event()
        self._awake.set()
        self._list_drawn = threading.Event()
        """Set once the list's first rows are on the screen: the charts' history is read after that."""
        self._panes_up = threading.Event()
        """Set once the selected job's panes are mounted: its log, details and charts are read then."""

    def compose_body(self) -> ComposeResult:
        yield DataTable[str](id="jobs", cursor_type="row", zebra_stripes=True)
        yield Static(
            "No jobs yet: press n to launch one (try the demo fine-tune preset).", id="empty", markup=False
        )
        yield Static("", id="job-error", markup=False)
        yield Vertical(id="panes")  # the selected job's panes: mounted once the list is drawn

    def _panes(self) -> TabbedContent:
        panes = TabbedContent(initial=self._pane)
        for pane in (
            TabPane("c Charts", MetricCharts(), CompilesChart(), id="charts"),  # each tab shows its key
            TabPane("l Log", Log(id="job-log", max_lines=LOG_LINES, auto_scroll=True), id="log"),
            TabPane(
                "d Details",
                VerticalScroll(
                    InsightPanel(lambda: self.selected, self._list_drawn.is_set),  # findings first
                    Static("", id="job-details", markup=False),
                ),
                id="details",
            ),
        ):
            panes.compose_add_child(pane)
        return panes

    async def _show_panes(self) -> None:
        """After the list's first frame: the panes (tabs, four charts, log, details) mount, and the
        poll then reads the selected job for them at once."""
        self._list_drawn.set()
        if self._panes_up.is_set() or self.query(TabbedContent):
            return
        await self.query_one("#panes", Vertical).mount(self._panes())
        if self._pane_widgets() is not None:  # not when the screen closed around the mount
            self.query_one(TabbedContent).active = self._pane  # a pane key pressed while they mounted
            self._panes_up.set()

    def _pane_widgets(self) -> tuple[MetricCharts, Log, Static] | None:
        """The selected job's charts, log and details; None while they are not all there (before the
        panes compose, or once the screen is closing): a poll's handler must not assume them."""
        try:
            return (
                self.query_one(MetricCharts),
                self.query_one("#job-log", Log),
                self.query_one("#job-details", Static),
            )
        except NoMatches:
            return None

    def on_mount(self) -> None:
        table = self.query_one("#jobs", DataTable)
        for column in COLUMNS:
            table.add_column(column, key=column)
        table.focus()
        self.poll_jobs()

    def on_screen_suspend(self) -> None:
        self._awake.clear()

    def on_screen_resume(self) -> None:
        self._awake.set()

    @work(
        thread=True, exclusive=True, exit_on_error=False, group="jobs-poll", description="watch run folders"
    )
    def poll_jobs(self) -> None:
        """Read the run folders and post what changed; a poll that changed nothing posts nothing."""
        worker = get_current_worker()
        poller = JobsPoller(details_text, cluster_nodes)
        while not worker.is_cancelled:
            panes = self._panes_up.is_set()
            message = poller.poll(self.selected, history=self._list_drawn.is_set(), detail=panes)
            if message is not None:
                self.post_message(message)
            while not panes and not self._panes_up.wait(0.05) and not worker.is_cancelled:
                pass  # the list draws first; the panes' first poll comes as soon as they mount
            if not panes:
                continue
            if not poller.loading:  # a long history loads without a pause
                worker.cancelled_event.wait(poller.wait_s)
            while not self._awake.is_set() and not worker.is_cancelled:
                self._awake.wait(0.2)

    def on_jobs_polled(self, message: JobsPolled) -> None:
        self.views.update((v.id, v) for v in message.changed)
        self._show_table(message.changed, message.order)
        detail = message.detail
        if detail is None:
            return
        if self.selected is None:
            self.selected = detail.run_id
        if detail.run_id != self.selected or (widgets := self._pane_widgets()) is None:
            return
        charts, log, details = widgets
        if detail.charts is not None:
            charts.show(detail.charts)
        if detail.reset_log:
            log.clear()
        if detail.new_lines:
            log.write_lines(detail.new_lines)
        details.update(detail.text)
        view = self.views.get(detail.run_id)
        error = f"{view.state}: {view.error}" if view is not None and view.error else ""
        shown = self.query_one("#job-error", Static)
        shown.update(error)
        shown.display = bool(error)

    def _show_table(self, changed: list[JobView], order: list[str] | None) -> None:
        """Newest first; all rows when the list changed (the newest FIRST_ROWS at once, the older ones
        after that frame is drawn), else only the changed rows, in place (the cursor stays on its job)."""
        table = self.query_one("#jobs", DataTable)
        if order is not None:
            self.query_one("#empty").display = not order
            table.clear()
            newest = list(reversed(order))
            self._rows_shown += 1
            self._add_rows(self._rows_shown, newest[:FIRST_ROWS])
            # Not call_after_refresh: while the app batches updates (a mode switch holds the paint
            # for 50 ms) those callbacks run unpainted, and the panes' mount would come first.
            self.set_timer(PANES_AFTER_S, self._show_panes)
            if newest[FIRST_ROWS:]:  # the older rows too, once that frame is out
                self.set_timer(PANES_AFTER_S, partial(self._add_rows, self._rows_shown, newest[FIRST_ROWS:]))
            return
        for view in changed:
            if view.id not in table.rows:
                continue  # an older row still to be added
            for column, cell in zip(COLUMNS, self._cells(view), strict=True):
                if table.get_cell(view.id, column) != cell:
                    table.update_cell(view.id, column, cell, update_width=True)

    def _add_rows(self, shown: int, run_ids: list[str]) -> None:
        """Append these rows, unless the list was rebuilt since (`shown` counts rebuilds)."""
        if shown != self._rows_shown:
            return
        table = self.query_one("#jobs", DataTable)
        for run_id in run_ids:
            table.add_row(*self._cells(self.views[run_id]), key=run_id)
        if self.selected in run_ids:
            table.move_cursor(row=table.get_row_index(self.selected))

    def _cells(self, view: JobView) -> tuple[Text, ...]:
        """A row's cells as Text: a table reads a str as markup, and a job's name is its spec's
        (a team's shared runs folder: `[/x]` stopped the panel, as on the Slurm screen)."""
        step = f"{view.step}/{view.max_steps}" if view.max_steps else str(view.step)
        state = "stopping" if view.stop_requested and view.state == "running" else view.state
        loss = f"{view.loss:.4f}" if view.loss is not None else "—"
        if view.metrics_found is False:
            loss = "no metrics"
        label = ("● " if view.id in self.marked else "") + job_label(view)
        cells = (label, state, format_duration(view.elapsed_s), step, format_duration(view.eta_s), loss)
        return tuple(map(Text, cells))

    @on(DataTable.RowHighlighted, "#jobs")
    def row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        run_id = str(event.row_key.value) if event.row_key is not None else None
        if run_id and run_id != self.selected:
            self.selected = run_id
            if not self._panes_up.is_set() or (widgets := self._pane_widgets()) is None:
                return
            charts, log, _ = widgets
            log.clear()
            charts.show(None)

    def action_new_job(self) -> None:
        from gaudi_tui.ui.screens.job_form import JobFormScreen  # on use: the list draws sooner

        cards = tuple(self.app.selected_cards)
        self.app.push_screen(JobFormScreen(cards), self._launched)

    def _launched(self, run_id: str | None) -> None:
        if run_id:
            self.selected = run_id
            self.notify(f"Started {run_id}. It keeps running if you quit the panel.")

    async def action_try_in_chat(self) -> None:
        """Open the job's result (its model/, or a running job's newest complete checkpoint) in Chat,
        beside its base model."""
        from gaudi_tui.core.chat import trained
        from gaudi_tui.core.chat.errors import ChatError
        from gaudi_tui.ui.screens.chat import ChatScreen

        run = self._selected_run()
        if run is None:
            return
        try:
            trained.run_model(run.id)
        except ChatError as exc:
            self.notify(exc.message, severity="warning")
            return
        await self.app.switch_mode("chat")
        chat = self.app.screen
        if isinstance(chat, ChatScreen):
            chat.try_trained(run.id)

    def action_mark_job(self) -> None:
        """Mark the highlighted run for a comparison, or unmark it."""
        if self.selected is None or self.selected not in self.views:
            self.notify("No job selected: press n to launch one.", severity="warning")
            return
        run_id = self.selected
        if run_id in self.marked:
            self.marked.remove(run_id)
        else:
            self.marked.append(run_id)
        table = self.query_one("#jobs", DataTable)
        if run_id in table.rows:
            table.update_cell(run_id, COLUMNS[0], self._cells(self.views[run_id])[0], update_width=True)

    def action_compare_jobs(self) -> None:
        from gaudi_tui.core.jobs.comparable import refusal
        from gaudi_tui.ui.screens.job_compare import JobCompareScreen

        if len(self.marked) < 2:
            self.notify(f"Mark two runs or more with m to compare them ({len(self.marked)} marked).")
        elif why := refusal(
            {run_id: view.kind for run_id in self.marked if (view := self.views.get(run_id))}
        ):
            self.notify(f"Not compared: {why} (m unmarks a run).", severity="warning", markup=False)
        else:
            self.app.push_screen(JobCompareScreen(list(self.marked)))
