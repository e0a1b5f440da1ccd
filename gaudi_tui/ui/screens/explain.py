"""Explain an error: paste a text, or pick a job's log, and see the known Gaudi errors in it,
each with its cause, fix, source and the related check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Footer, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from gaudi_tui.core.doctor.knowledge import Match, explain, job_logs, read_log_tail
from gaudi_tui.core.doctor.model import GLYPHS, CheckResult
from gaudi_tui.ui.screens.dialog import Dialog


def matches_text(matches: list[Match], where: str, results: Mapping[str, CheckResult]) -> Text:
    """The matches as the pane shows them, each with the state of its related check."""
    if not matches:
        return Text(f"No known Gaudi error in {where}.", style="italic")
    text = Text(f"{len(matches)} known Gaudi error(s) in {where}:")
    for m in matches:
        times = f" (×{m.count})" if m.count > 1 else ""
        text.append(f"\n\n{m.entry.title}", style="bold")
        text.append(f"\nline {m.line_number}{times}: {m.line}")
        for label, body in (("Cause", m.entry.cause), ("Fix", m.entry.fix), ("Source", m.entry.source)):
            text.append(f"\n{label}: ", style="bold")
            text.append(body)
        result = results.get(m.entry.check)
        state = f"{GLYPHS[result.status]} {result.finding}" if result else "not run yet (r on the Checklist)"
        text.append("\nCheck: ", style="bold")
        text.append(f"{m.entry.check} — {state}")
    return text


class ExplainScreen(Dialog[None]):
    DEFAULT_CSS = """
    ExplainScreen > .dialog { width: 100%; max-width: 110; height: 100%; }
    ExplainScreen .explain-label { height: 1; color: $text-muted; }
    ExplainScreen #explain-text { height: 6; }
    ExplainScreen #explain-logs { height: 5; }
    ExplainScreen #explain-results { height: 1fr; }
    """
    BINDINGS = [Binding("escape", "dismiss", "Close", id="explain.close")]

    @dataclass
    class Explained(Message):
        where: str
        matches: list[Match]

    def __init__(self, results: Mapping[str, CheckResult] | None = None) -> None:
        super().__init__()
        self.results = dict(results or {})
        self.logs: list[Path] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("Explain an error: paste it below, or pick a job's log", classes="explain-label")
            yield TextArea(id="explain-text", placeholder="Paste an error or a traceback here")
            yield Static("Job logs (enter explains one):", classes="explain-label")
            yield OptionList(id="explain-logs")
            with VerticalScroll(id="explain-results"):
                yield Static("Matches appear here.", id="explain-matches", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        from gaudi_tui.core.jobs.runfolder import runs_dir  # psutil and the job modules load on use

        self.logs = job_logs(runs_dir())
        options = self.query_one("#explain-logs", OptionList)
        if self.logs:
            options.add_options(Option(f"{log.parent.name}/stdout.log") for log in self.logs)
        else:
            options.add_option(Option("no job logs yet (each training run writes one)", disabled=True))
        self.query_one("#explain-text", TextArea).focus()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        text = event.text_area.text
        if text.strip():
            self._show("the pasted text", explain(text))
        else:
            self.query_one("#explain-matches", Static).update("Matches appear here.")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_index < len(self.logs):
            self.explain_log(self.logs[event.option_index])

    @work(thread=True, exclusive=True, exit_on_error=False, group="explain", description="explain a job log")
    def explain_log(self, log: Path) -> None:
        where = f"{log.parent.name}/stdout.log"
        try:
            matches = explain(read_log_tail(log))
        except OSError as exc:
            self.app.call_from_thread(self.notify, f"Cannot read {where}: {exc}", severity="error")
            return
        self.post_message(self.Explained(where, matches))

    def on_explain_screen_explained(self, message: Explained) -> None:
        self._show(message.where, message.matches)

    def _show(self, where: str, matches: list[Match]) -> None:
        self.query_one("#explain-matches", Static).update(matches_text(matches, where, self.results))
