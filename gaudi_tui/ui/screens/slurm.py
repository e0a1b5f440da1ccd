"""Slurm (key 6): the queue — yours or everyone's — and each node's cards, like turm with cards.

A thread worker takes one shared queue snapshot (`core.slurm.poll`: one `squeue` call however many
jobs and views want it) every REFRESH_S while the screen is shown, and the nodes (`sinfo --json`, at
most every NODES_EVERY_S: `core.slurm.nodes_poll`); the screen only draws. `t` tails the selected
job's output file (the path `scontrol show job` gives, expanded), `c` cancels it with a chosen
signal, `a` switches between your jobs and everyone's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, OptionList, Static
from textual.widgets.option_list import Option

from gaudi_tui.core.slurm import model, poll, table
from gaudi_tui.core.slurm.cli import Slurm, SlurmError
from gaudi_tui.core.slurm.nodes_poll import NodesPoll
from gaudi_tui.core.slurm.queue_jobs import Picked, QueueJobs
from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.screens.dialog import Dialog
from gaudi_tui.ui.widgets.measured_table import MeasuredTable
from gaudi_tui.ui.widgets.window_table import WindowTable

REFRESH_S = 2.0
TAIL_BYTES = 64 * 1024
TAIL_LINES = 200
SIGNALS = (
    ("cancel", "cancel (scancel: TERM to all, KILL after KillWait)"),
    ("TERM", "TERM to the job's steps (srun tasks)"),
    ("INT", "INT to the steps"),
    ("USR1", "USR1 to the steps"),
    ("USR2", "USR2 to the steps"),
    ("HUP", "HUP to the steps"),
    ("TERM:batch", "TERM to the batch shell only (--batch)"),
    ("KILL", "KILL to the steps"),
)


@dataclass(frozen=True)
class SlurmView:
    """What one refresh found: the queue snapshot, the nodes (or why not), and the time."""

    snapshot: poll.Snapshot
    nodes: tuple[model.SlurmNode, ...]
    nodes_error: str | None
    now: float


Loader = Callable[[], SlurmView]


def live_view(slurm: Slurm, nodes: NodesPoll) -> SlurmView:
    snapshot = poll.shared(slurm).get()
    return SlurmView(snapshot, *nodes.get(), time.time())


def tail_text(path: str, limit: int = TAIL_BYTES, lines: int = TAIL_LINES) -> str:
    """The last `lines` lines of a file (reading at most `limit` bytes), or why it cannot be read."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            data = fh.read().decode("utf-8", errors="replace")
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc} (is the job's folder on a filesystem this host shares?)"
    return "\n".join(data.splitlines()[-lines:]) or "(empty so far)"


class Loaded(Message):
    def __init__(self, view: SlurmView) -> None:
        super().__init__()
        self.view = view


class Tailed(Message):
    def __init__(self, job_id: int, path: str, text: str) -> None:
        super().__init__()
        self.job_id, self.path, self.text = job_id, path, text


class SignalDialog(Dialog[str | None]):
    """Choose how to cancel one job; Esc leaves it alone."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Close", id="slurm.signal.close")]

    def __init__(self, job: model.QueueJob) -> None:
        super().__init__()
        self.job = job

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(
                f"Cancel Slurm job {self.job.label} ({self.job.name})", classes="dialog-title", markup=False
            )
            if self.job.state == "PENDING":
                yield Static(
                    "It is pending: only a plain cancel works (a signal to a pending job blocks ~95 s).",
                    classes="dialog-hint",
                    markup=False,
                )
            yield OptionList(*(Option(words, id=key) for key, words in SIGNALS), id="slurm-signals")
            yield Static("Enter sends it · Esc keeps the job", classes="dialog-hint", markup=False)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class SlurmScreen(PanelScreen):
    TITLE = "Slurm"
    AUTO_FOCUS = "#slurm-queue"
    HELP = (
        "The Slurm queue of the cluster SLURM_CONF (or /etc/slurm) names: your jobs, or everyone's with a, "
        "with state, why a job waits in words, nodes, cards (nodes × cards per node), elapsed and time "
        "left; below, each node's cards total/used/free, drained and down nodes with their reason. t tails "
        "the selected job's output file (Slurm sites share the filesystem), c cancels it with a chosen "
        "signal. One squeue call a refresh serves this screen and every Slurm job of the panel; a "
        "controller that does not answer is said as such, and no job is taken for ended."
    )
    DEFAULT_CSS = """
    SlurmScreen #slurm-banner { display: none; border: round $warning; padding: 0 1; height: auto; }
    SlurmScreen #slurm-banner.shown { display: block; }
    SlurmScreen #slurm-status { height: auto; padding: 0 1; color: $text-muted; }
    SlurmScreen #slurm-queue { height: 1fr; min-height: 5; }
    SlurmScreen #slurm-nodes { height: auto; max-height: 10; }
    SlurmScreen #slurm-tail { display: none; height: 1fr; border: round $primary; padding: 0 1; }
    SlurmScreen #slurm-tail.shown { display: block; }
    """
    BINDINGS = [
        Binding("a", "toggle_all", "Mine/all", id="slurm.all"),
        Binding("t", "tail", "Tail output", id="slurm.tail"),
        Binding("c", "cancel_job", "Cancel…", id="slurm.cancel"),
        Binding("r", "refresh_now", "Refresh", id="slurm.refresh", show=False),
    ]

    def __init__(
        self,
        loader: Loader | None = None,
        slurm: Slurm | None = None,
        interval: float = REFRESH_S,
        user: str | None = None,
    ) -> None:
        """`loader` replaces the live cluster (recorded outputs in tests and screenshots); `user`:
        whose jobs "mine" means (default: this process's user)."""
        super().__init__()
        self.user = user or table.me()
        self.slurm = slurm or Slurm()
        self.nodes = NodesPoll(self.slurm)
        self._loader = loader or (lambda: live_view(self.slurm, self.nodes))
        self.interval = interval
        self.view: SlurmView | None = None
        self.show_all = False
        self.tailing: int | None = None
        self.rows: QueueJobs = QueueJobs()
        """The jobs the queue lists, in its order (decoded when read: the table reads its window's)."""

    def compose_body(self) -> ComposeResult:
        yield Static("", id="slurm-banner", markup=False)
        yield Static("waiting for the first refresh…", id="slurm-status", markup=False)
        queue = WindowTable(id="slurm-queue", zebra_stripes=True)
        queue.add_columns(*table.QUEUE_COLUMNS)
        yield queue
        nodes: MeasuredTable[str] = MeasuredTable(id="slurm-nodes", cursor_type="none", show_cursor=False)
        nodes.add_columns(*table.NODE_COLUMNS)
        yield nodes
        yield Static("", id="slurm-tail", markup=False)

    def on_mount(self) -> None:
        self.set_interval(self.interval, self._tick)

    def on_screen_resume(self) -> None:
        self.call_after_refresh(self.refresh_view)

    def _tick(self) -> None:
        if self.is_current:
            self.refresh_view()
            if self.tailing is not None:
                self.tail_job(self.tailing)

    def action_refresh_now(self) -> None:
        self.nodes.expire()
        self.refresh_view()

    @work(thread=True, exclusive=True, group="slurm", exit_on_error=False, description="slurm refresh")
    def refresh_view(self) -> None:
        self.post_message(Loaded(self._loader()))

    def on_loaded(self, message: Loaded) -> None:
        self.view = message.view
        self._draw()

    # -- drawing ------------------------------------------------------------------------------
    def _draw(self) -> None:
        view = self.view
        if view is None:
            return
        problems = [p for p in (view.snapshot.error, view.nodes_error) if p]
        banner = self.query_one("#slurm-banner", Static)
        banner.update("\n".join(f"⚠ {p}" for p in dict.fromkeys(problems)))
        banner.set_class(bool(problems), "shown")
        jobs = view.snapshot.jobs
        places = table.order(jobs, None if self.show_all else self.user)
        self._draw_queue(Picked(jobs, places), view.now)
        nodes = self.query_one("#slurm-nodes", DataTable)
        nodes.clear()
        for node in view.nodes:
            nodes.add_row(*map(Text, table.node_row(node)), key=node.name)
        states = [state for _, _, state in self.rows.briefs()]
        running, pending = states.count("RUNNING"), states.count("PENDING")
        free = sum(n.cards_free for n in view.nodes)
        total = sum(n.cards_total for n in view.nodes)
        unusable = sum(not n.usable for n in view.nodes)
        whose = "everyone's jobs" if self.show_all else f"{self.user}'s jobs"
        age = table.duration(max(0.0, view.now - view.snapshot.taken))
        status = (
            f"{whose}: {len(self.rows)} · {running} running · {pending} pending   nodes: {len(view.nodes)} · "
            f"{free}/{total} cards free"
            + (f" · {unusable} drained/down" if unusable else "")
            + f"   queue read {age} ago"
        )
        self.query_one("#slurm-status", Static).update(status)

    def _draw_queue(self, jobs: QueueJobs, now: float) -> None:
        """The table holds a window of the listed jobs (WindowTable), their rows made only for it;
        rows of the same jobs have only their changed cells updated (a table cleared and filled
        again costs a frame of every row), and the selected job stays selected wherever it moved.
        Cells are Text: a table reads a str as markup, and a job's name is anyone's (`[/x]` stopped
        the panel)."""
        queue = self.query_one("#slurm-queue", WindowTable)
        selected = self.selected()
        briefs = jobs.briefs()
        at = queue.position
        if selected is not None and (at is None or at >= len(briefs) or briefs[at][0] != selected.job_id):
            at = next((i for i, b in enumerate(briefs) if b[0] == selected.job_id), 0)  # gone: the top

        def rows(start: int, stop: int) -> list[tuple[str, tuple[str, ...]]]:
            return [(str(briefs[i][0]), table.queue_row(jobs[i], now)) for i in range(start, stop)]

        self.rows = jobs
        queue.show(len(jobs), rows, at)

    def selected(self) -> model.QueueJob | None:
        at = self.query_one("#slurm-queue", WindowTable).position
        return self.rows[at] if at is not None and at < len(self.rows) else None

    # -- keys ---------------------------------------------------------------------------------
    def action_toggle_all(self) -> None:
        self.show_all = not self.show_all
        self._draw()

    def action_tail(self) -> None:
        pane = self.query_one("#slurm-tail", Static)
        job = self.selected()
        if self.tailing is not None and (job is None or job.job_id == self.tailing):
            self.tailing = None
            pane.remove_class("shown")
            return
        if job is None:
            self.notify("No job selected.", severity="warning")
            return
        self.tailing = job.job_id
        pane.update(f"reading the output of job {job.label}…")
        pane.add_class("shown")
        self.tail_job(job.job_id)

    @work(thread=True, exclusive=True, group="slurm-tail", exit_on_error=False, description="slurm tail")
    def tail_job(self, job_id: int) -> None:
        job = self.rows.job(job_id)
        path = job.stdout_path() if job else ""
        try:
            line = self.slurm.show_job(job_id)
            shown = model.shown_job(line) if line else None
            if (
                shown is not None
                and shown.stdout
                and (Path(shown.stdout).exists() or not Path(path).exists())
            ):
                path = shown.stdout  # 22.05's scontrol shows `%%` unexpanded: the queue's expansion wins then
        except SlurmError:
            pass  # the controller does not answer: the path from the queue snapshot
        self.post_message(Tailed(job_id, path, tail_text(path) if path else "no output file known"))

    def on_tailed(self, message: Tailed) -> None:
        if message.job_id != self.tailing:
            return
        pane = self.query_one("#slurm-tail", Static)
        pane.border_title = f"job {message.job_id}: {Path(message.path).name}"
        pane.update(message.text)

    def action_cancel_job(self) -> None:
        job = self.selected()
        if job is None:
            self.notify("No job selected.", severity="warning")
            return
        if not job.active:
            self.notify(f"Job {job.label} has already ended ({job.state.lower()}).", severity="warning")
            return

        def chosen(choice: str | None) -> None:
            if choice is not None:
                self.send(job, choice)

        self.app.push_screen(SignalDialog(job), chosen)

    @work(thread=True, group="slurm-cancel", exit_on_error=False, description="scancel")
    def send(self, job: model.QueueJob, choice: str) -> None:
        signal, _, where = choice.partition(":")
        target = table.scancel_id(job)  # exactly this row: one array task, or the pending remainder
        try:
            if signal == "cancel" or job.state == "PENDING":
                self.slurm.scancel(target)
                said = f"Job {job.label} cancelled." + (
                    " (pending: cancelled without a signal)" if signal != "cancel" else ""
                )
            else:
                self.slurm.scancel(target, signal, batch=where == "batch")
                said = f"SIG{signal} sent to job {job.label}" + (
                    " (batch shell)." if where else " (its steps)."
                )
        except SlurmError as exc:
            self.app.call_from_thread(
                self.notify, f"scancel {job.label}: {exc}", severity="error", markup=False
            )
            return
        self.app.call_from_thread(self.notify, said, markup=False)
        self.app.call_from_thread(self.refresh_view)
