"""Checklist: the Gaudi environment doctor.

`r` runs every check concurrently (core/doctor/runner.py) in one thread worker; results land one
by one as messages. Each row opens to the explanation and the fix; `c` copies the fix; `f` applies
the environment fixes the findings ask for to jobs launched from the panel (`app.env_fixes`);
`e` explains an error text or a job's log.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import ListItem, ListView, ProgressBar, Static
from textual.worker import Worker, WorkerState, get_current_worker

from gaudi_tui.core.doctor.checks import ALL_CHECKS
from gaudi_tui.core.doctor.context import CheckContext
from gaudi_tui.core.doctor.model import GLYPHS, Check, CheckResult, counts, env_fixes
from gaudi_tui.core.doctor.runner import run_checks
from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.screens.explain import ExplainScreen

ContextFactory = Callable[[threading.Event], CheckContext]


def host_context(cancel: threading.Event) -> CheckContext:
    return CheckContext.for_this_host(cancel=cancel)


def detail_text(result: CheckResult) -> Text:
    """What an opened row shows: the whole finding, why it matters, the fix."""
    text = Text(result.finding)
    for label, body in (("Why", result.explanation), ("Fix", result.fix)):
        if body:
            text.append(f"\n{label}: ", style="bold")
            text.append(body)
    return text


class CheckRow(ListItem):
    """One check: status, id and finding on one line; enter opens the explanation and the fix."""

    DEFAULT_CSS = """
    CheckRow { height: auto; }
    CheckRow > Horizontal { height: 1; }
    CheckRow .row-status { width: 7; }
    CheckRow .row-id { width: 28; }
    CheckRow .row-finding { width: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    CheckRow .row-detail { display: none; padding: 0 1 1 7; color: $text; }
    CheckRow.-open .row-detail { display: block; }
    CheckRow.-ok .row-status { color: $success; }
    CheckRow.-warn .row-status { color: $warning; text-style: bold; }
    CheckRow.-fail .row-status { color: $error; text-style: bold; }
    CheckRow.-skip .row-status, CheckRow.-pending .row-status, CheckRow.-pending .row-finding { color: $text-muted; }
    """

    def __init__(self, check: Check) -> None:
        super().__init__(id=f"row-{check.id.replace('.', '-')}", classes="-pending")
        self.check = check
        self.result: CheckResult | None = None

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Static("·", classes="row-status", markup=False)
            yield Static(self.check.id, classes="row-id", markup=False)
            yield Static(self.check.title, classes="row-finding", markup=False)
        yield Static("", classes="row-detail", markup=False)

    def show_running(self) -> None:
        self.result = None
        self.set_classes("-pending")
        self.query_one(".row-status", Static).update("…")
        self.query_one(".row-finding", Static).update(f"{self.check.title}: running")
        self.query_one(".row-detail", Static).update("Running…")

    def show(self, result: CheckResult) -> None:
        self.result = result
        opened = self.has_class("-open")
        self.set_classes(f"-{result.status}" + (" -open" if opened else ""))
        self.query_one(".row-status", Static).update(f"{GLYPHS[result.status]} {result.status}")
        self.query_one(".row-finding", Static).update(result.finding)
        self.query_one(".row-detail", Static).update(detail_text(result))

    def toggle(self) -> None:
        if self.result is not None:
            self.toggle_class("-open")


class CheckList(ListView):
    BINDINGS = [Binding("enter", "select_cursor", "Details", id="checklist.details")]


class ChecklistScreen(PanelScreen):
    TITLE = "Checklist"
    HELP = (
        "Environment doctor: every check of the Gaudi stack, with why it matters and the fix. "
        "r runs the checks (concurrently; those that import habana_frameworks or call "
        "is_torch_hpu_available() run in throwaway child processes), enter opens a row, c copies its "
        "fix, f applies the environment fixes to jobs launched from this panel, e explains an error "
        "text or a job's log."
    )
    BINDINGS = [
        Binding("r", "run", "Run checks", id="checklist.run"),
        Binding("c", "copy_fix", "Copy fix", id="checklist.copy_fix"),
        Binding("f", "toggle_env_fixes", "Env fixes", id="checklist.env_fixes"),
        Binding("e", "explain", "Explain error", id="checklist.explain"),
    ]
    DEFAULT_CSS = """
    ChecklistScreen #checklist-summary { height: 1; padding: 0 1; }
    ChecklistScreen #checklist-progress { height: 1; padding: 0 1; }
    ChecklistScreen #checklist-env { height: auto; padding: 0 1; color: $text-muted; }
    ChecklistScreen #checklist-env.-on { color: $text; }
    ChecklistScreen CheckList { height: 1fr; border-top: solid $panel; }
    """

    apply_fixes: reactive[bool] = reactive(False)

    @dataclass
    class CheckDone(Message):
        run: int
        result: CheckResult

    @dataclass
    class RunEnded(Message):
        run: int

    def __init__(self, context_factory: ContextFactory = host_context) -> None:
        super().__init__()
        self.context_factory = context_factory
        self.results: dict[str, CheckResult] = {}
        self.run_number = 0
        self.running = False

    def compose_body(self) -> ComposeResult:
        yield Static(
            f"Checklist — not run yet: r runs the {len(ALL_CHECKS)} checks; enter opens a row.",
            id="checklist-summary",
        )
        yield ProgressBar(total=len(ALL_CHECKS), show_eta=False, id="checklist-progress")
        yield Static("", id="checklist-env", markup=False)
        yield CheckList(*(CheckRow(check) for check in ALL_CHECKS), id="checklist-rows")

    def on_mount(self) -> None:
        self.query_one(ProgressBar).display = False
        self._show_env_fixes()
        self.query_one(CheckList).focus()
        if self.app.autorun_checks:
            self.call_after_refresh(self.action_run)

    def _row(self, check_id: str) -> CheckRow:
        return self.query_one(f"#row-{check_id.replace('.', '-')}", CheckRow)

    def action_run(self) -> None:
        self.run_number += 1
        self.results = {}
        self.running = True
        for row in self.query(CheckRow):
            row.show_running()
        progress = self.query_one(ProgressBar)
        progress.update(progress=0)
        progress.display = True
        self._show_summary()
        self.run_all(self.run_number)

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="checklist",
        description="environment checklist",
    )
    def run_all(self, run: int) -> None:
        worker = get_current_worker()
        ctx = self.context_factory(worker.cancelled_event)
        run_checks(ALL_CHECKS, ctx, on_result=lambda result: self.post_message(self.CheckDone(run, result)))
        if not worker.is_cancelled:
            self.post_message(self.RunEnded(run))

    def on_checklist_screen_check_done(self, message: CheckDone) -> None:
        if message.run != self.run_number:
            return
        self.results[message.result.id] = message.result
        self._row(message.result.id).show(message.result)
        self.query_one(ProgressBar).update(progress=len(self.results))
        self._show_summary()
        self._show_env_fixes()

    def on_checklist_screen_run_ended(self, message: RunEnded) -> None:
        if message.run == self.run_number:
            self.running = False
            self.query_one(ProgressBar).display = False
            self._show_summary()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "checklist" and event.state is WorkerState.ERROR:
            self.running = False
            self.notify(f"The checklist stopped: {event.worker.error}", title="Checklist", severity="error")

    def _show_summary(self) -> None:
        total = len(ALL_CHECKS)
        tally = counts(self.results.values())
        parts = [
            f"[$success]{GLYPHS['ok']} {tally['ok']} ok[/]",
            f"[$warning]{GLYPHS['warn']} {tally['warn']} warn[/]",
            f"[$error]{GLYPHS['fail']} {tally['fail']} fail[/]",
            f"[$text-muted]{GLYPHS['skip']} {tally['skip']} skip[/]",
        ]
        head = f"running, {len(self.results)} of {total} done" if self.running else f"{total} checks"
        self.query_one("#checklist-summary", Static).update(f"Checklist — {head}   " + "   ".join(parts))

    def _show_env_fixes(self) -> None:
        fixes = env_fixes(self.results.values())
        if self.apply_fixes:
            self.app.env_fixes = fixes
        shown = " ".join(f"{k}={v}" for k, v in fixes.items())
        if self.apply_fixes:
            line = f"Env fixes ON for jobs launched here: {shown or 'none needed'} (f turns them off)"
        elif fixes:
            line = f"Env fixes off: f applies {shown} to jobs launched here"
        else:
            line = "Env fixes off: f applies what the findings ask for to jobs launched here"
        label = self.query_one("#checklist-env", Static)
        label.update(line)
        label.set_class(self.apply_fixes, "-on")

    def watch_apply_fixes(self, on: bool) -> None:
        if not on:
            self.app.env_fixes = {}
        if self.is_mounted:
            self._show_env_fixes()

    def action_toggle_env_fixes(self) -> None:
        self.apply_fixes = not self.apply_fixes

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        if isinstance(event.item, CheckRow):
            event.item.toggle()

    def action_copy_fix(self) -> None:
        row = self.query_one(CheckList).highlighted_child
        result = row.result if isinstance(row, CheckRow) else None
        if result is None or not result.fix:
            self.notify("This row has no fix to copy.", title="Copy fix", severity="warning")
            return
        self.app.copy_to_clipboard(result.fix)
        self.notify(f"Copied the fix for {result.id}.", title="Copy fix")

    def action_explain(self) -> None:
        self.app.push_screen(ExplainScreen(dict(self.results)))
