"""The one frame every modal dialog shares (posting's `.modal-body`, as a base class)."""

from __future__ import annotations

from textual.screen import ModalScreen, ScreenResultType


class Dialog(ModalScreen[ScreenResultType]):
    """A modal whose child with class "dialog" is the frame: centred, rounded border on the
    surface, 64 cells wide. A subclass sizes or colours its frame with `Name > .dialog { … }`."""

    DEFAULT_CSS = """
    Dialog { align: center middle; }
    Dialog > .dialog { width: 64; max-width: 100%; height: auto; max-height: 100%;
                       border: round $primary; background: $surface; padding: 0 1; }
    Dialog .dialog-title { text-style: bold; }
    Dialog .dialog-hint { color: $text-muted; }
    Dialog .dialog-buttons { height: auto; align-horizontal: right; }
    Dialog .dialog-buttons Button { margin: 0 0 0 1; }
    """
