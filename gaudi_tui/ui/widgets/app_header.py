"""One-line header: app name, host, current screen, a replay mark, and the accelerator with why it
was chosen."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

if TYPE_CHECKING:
    from gaudi_tui.core.accelerator import Accelerator


class AppHeader(Horizontal):
    DEFAULT_CSS = """
    AppHeader { height: 1; dock: top; background: $panel; }
    AppHeader > Static { width: auto; padding: 0 1; }
    AppHeader > #header-title { text-style: bold; background: $primary; color: $text; }
    AppHeader > #header-accel { width: 1fr; color: $text-muted; }
    AppHeader > #header-replay { background: $warning; color: $text; text-style: bold; }
    """

    def __init__(self, screen_title: str, hostname: str, replay: str | None = None) -> None:
        """`replay`: what the Devices screen replays (e.g. "gaudi2"), shown so it is never taken for
        this host's cards."""
        super().__init__()
        self.screen_title, self.hostname, self.replay = screen_title, hostname, replay

    def compose(self) -> ComposeResult:
        yield Static("gaudi-tui", id="header-title", markup=False)
        yield Static(self.screen_title, id="header-screen", markup=False)
        yield Static(self.hostname, id="header-host", markup=False)
        if self.replay:
            yield Static(f"REPLAY {self.replay}", id="header-replay", markup=False)
        # Composed with its text, not updated in on_mount: an update before the first frame makes
        # Textual draw a frame of that widget alone.
        self._composed_with = self._accelerator()
        accel = Static(_accel_text(self._composed_with), id="header-accel", markup=False)
        if self._composed_with is not None:
            accel.tooltip = self._composed_with.reason
        yield accel

    def _accelerator(self) -> Accelerator | None:
        return getattr(self.app, "accelerator", None)

    def on_mount(self) -> None:
        self.watch(self.app, "accelerator", self._show_accelerator, init=False)
        if self._accelerator() is not self._composed_with:  # found between compose and mount
            self._show_accelerator(self._accelerator())

    def _show_accelerator(self, accel: Accelerator | None) -> None:
        self.query_one("#header-accel", Static).update(_accel_text(accel))
        if accel is not None:
            self.query_one("#header-accel", Static).tooltip = accel.reason


def _accel_text(accel: Accelerator | None) -> str:
    return "accelerator: detecting…" if accel is None else f"{accel.kind}: {accel.reason}"
