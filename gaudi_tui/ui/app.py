"""The gaudi-tui App: five mode screens, global bindings, command palette, shared state."""

from __future__ import annotations

import importlib
import logging
import socket
from collections.abc import Callable, Iterable

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import get_current_worker

from gaudi_tui.core import accelerator as accel_mod
from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.ui.screens.devices import DevicesScreen
from gaudi_tui.ui.screens.help import HelpScreen

log = logging.getLogger(__name__)

SCREENS_BY_KEY = (
    ("1", "devices", "Devices"),
    ("2", "checklist", "Checklist"),
    ("3", "chat", "Chat"),
    ("4", "training", "Training"),
    ("5", "fleet", "Fleet"),
)


def _on_first_use(module: str, name: str) -> Callable[[], Screen]:
    """A mode screen whose module is imported when the mode is first opened, not before the first
    frame (the Devices screen, shown first, is imported at once)."""

    def make() -> Screen:
        return getattr(importlib.import_module(f"gaudi_tui.ui.screens.{module}"), name)()

    return make


class GaudiApp(App[int]):
    """The control panel. Pass `accelerator` to skip the probe (tests, screenshots)."""

    TITLE = "gaudi-tui"
    MODES = {
        "devices": DevicesScreen,
        "checklist": _on_first_use("checklist", "ChecklistScreen"),
        "chat": _on_first_use("chat", "ChatScreen"),
        "training": _on_first_use("training", "TrainingScreen"),
        "fleet": _on_first_use("fleet", "FleetScreen"),
    }
    DEFAULT_MODE = "devices"
    BINDINGS = [
        *(
            Binding(
                key, f"switch_mode('{mode}')", title, id=f"mode.{mode}", tooltip=f"Open the {title} screen"
            )
            for key, mode, title in SCREENS_BY_KEY
        ),
        Binding("question_mark", "help", "Help", id="app.help", key_display="?"),
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("ctrl+q", "quit", "Quit", id="app.quit_ctrl", show=False, priority=True),
    ]

    accelerator: reactive[Accelerator | None] = reactive(None)
    selected_cards: reactive[tuple[int, ...]] = reactive(tuple)
    """Module IDs of the cards chosen for jobs (Devices sets it, Training reads it)."""
    env_fixes: reactive[dict[str, str]] = reactive(dict)
    """Environment fixes the Checklist applies to jobs launched from the panel (empty = off)."""

    def __init__(
        self,
        accelerator: Accelerator | None = None,
        hostname: str | None = None,
        autorun_checks: bool = False,
        prometheus: str | None = None,
    ) -> None:
        """`autorun_checks`: the Checklist runs its checks when first opened (the panel does this;
        tests leave it off so what they see does not depend on the host). `prometheus`: the URL the
        Fleet screen reads (`--prometheus`; None: $GAUDI_TUI_PROMETHEUS)."""
        super().__init__()
        self.hostname = hostname or socket.gethostname()
        self.autorun_checks = autorun_checks
        self.prometheus = prometheus
        self._given_accelerator = accelerator

    def on_mount(self) -> None:
        if self._given_accelerator is not None:
            self.accelerator = self._given_accelerator
        else:
            self.call_after_refresh(self.detect_accelerator)

    @work(
        thread=True, exclusive=True, exit_on_error=False, group="accelerator", description="accelerator probe"
    )
    def detect_accelerator(self) -> None:
        found = accel_mod.probe(cancel=get_current_worker().cancelled_event)
        log.info("accelerator: %s (%s)", found.kind, found.reason)
        self.call_from_thread(setattr, self, "accelerator", found)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.screen))

    async def action_quit(self) -> None:
        """Cancel workers and end children (screens end theirs on unmount), then exit 0."""
        self.workers.cancel_all()
        self.exit(0)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for key, mode, title in SCREENS_BY_KEY:
            yield SystemCommand(
                f"Open {title}",
                f"Switch to the {title} screen (key {key})",
                lambda m=mode: self.switch_mode(m),
            )
        yield SystemCommand("Help", "List every key binding of this screen (key ?)", self.action_help)
