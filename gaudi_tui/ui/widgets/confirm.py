"""A yes/no question in a modal: `y` confirms, `n`/Esc declines."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from gaudi_tui.ui.screens.dialog import Dialog


class ConfirmScreen(Dialog[bool]):
    DEFAULT_CSS = """
    ConfirmScreen > .dialog { width: 70; border: thick $warning; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self.question, id="confirm-question", markup=False)
            yield Static("y yes · n or Esc no", classes="dialog-hint", markup=False)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
