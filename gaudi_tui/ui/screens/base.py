"""Base class of the four panel screens: shared header and footer around a screen body."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from gaudi_tui.ui.widgets.app_header import AppHeader


class PanelScreen(Screen):
    """A mode screen. Subclasses set TITLE and HELP and implement `compose_body`."""

    TITLE = ""
    HELP = ""

    def compose(self) -> ComposeResult:
        yield AppHeader(self.TITLE)
        yield from self.compose_body()
        yield Footer()

    def compose_body(self) -> ComposeResult:
        raise NotImplementedError
