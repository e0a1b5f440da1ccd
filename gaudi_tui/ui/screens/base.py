"""Base class of the four panel screens: shared header and footer around a screen body, and the
typed way to reach the GaudiApp from a screen or widget."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual import getters
from textual.app import ComposeResult
from textual.message_pump import MessagePump
from textual.screen import Screen

from gaudi_tui.ui.panel_app import PanelApp
from gaudi_tui.ui.widgets.app_header import AppHeader
from gaudi_tui.ui.widgets.panel_footer import PanelFooter


def gaudi_app(node: MessagePump) -> PanelApp:
    """`node.app` as the GaudiApp it always is in this program (posting's `cast` pattern), so its
    shared state (accelerator, selected_cards, env_fixes, settings) is type-checked."""
    return cast("PanelApp", node.app)


class PanelScreen(Screen):
    """A mode screen. Subclasses set TITLE and HELP and implement `compose_body`."""

    TITLE = ""
    HELP = ""

    if TYPE_CHECKING:  # Textual's typed accessor; at run time `app` stays MessagePump's property
        app = getters.app(PanelApp)

    def compose(self) -> ComposeResult:
        yield AppHeader(self.TITLE, self.app.hostname, self.app.replay_label)
        yield from self.compose_body()
        yield PanelFooter(compact=True)

    def compose_body(self) -> ComposeResult:
        raise NotImplementedError
