"""The gaudi-tui App: five mode screens, global bindings, command palette, shared state, and the
user's settings applied (theme, keymap, device refresh, replay)."""

from __future__ import annotations

import importlib
import logging
import socket
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from textual import work
from textual.app import SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.theme import Theme
from textual.worker import get_current_worker

from gaudi_tui.core import settings as settings_mod
from gaudi_tui.core.devices.feed import MonitorConfig
from gaudi_tui.core.settings import Loaded, Settings
from gaudi_tui.ui.panel_app import PanelApp
from gaudi_tui.ui.screens.devices import DevicesScreen

if TYPE_CHECKING:  # the probe's and the replay's modules load on use, after the first frame
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.devices.sources.replay import Replay

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


class GaudiApp(PanelApp):
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

    def __init__(
        self,
        accelerator: Accelerator | None = None,
        hostname: str | None = None,
        autorun_checks: bool | None = None,
        settings: Loaded | None = None,
        replay: Replay | None = None,
        prometheus: str | None = None,
    ) -> None:
        """`settings`: what `core.settings.load()` read; None = the built-in defaults, and a theme
        picked in the palette is not saved (tests). `autorun_checks`: the Checklist runs its checks
        when first opened; by default the `checklist_on_open` setting when settings are given, else
        off (so what tests see does not depend on the host). `replay`: feed the Devices screen from
        recorded hl-smi outputs. `prometheus`: the URL the Fleet screen reads (`--prometheus`; None:
        the `cluster.prometheus_url` setting)."""
        super().__init__()
        self.hostname = hostname or socket.gethostname()
        self.prometheus = prometheus
        self._given_accelerator = accelerator
        self.loaded = settings
        self.settings: Settings = settings.settings if settings else Settings()
        if autorun_checks is None:
            autorun_checks = settings is not None and self.settings.checklist_on_open
        self.autorun_checks = autorun_checks
        self.replay = replay
        self._problems = [str(p) for p in settings.problems] if settings else []
        # The Devices mode is built from the settings (refresh, replay). Textual keeps the modes in
        # `_modes` (copied from MODES per app); subclasses (tests) that give their own screen keep it.
        if self._modes.get("devices") is DevicesScreen:
            self._modes["devices"] = self._devices_screen
        self.set_keymap(dict(self.settings.keys))
        self._use_theme(self.settings.theme)

    def _devices_screen(self) -> DevicesScreen:
        config = MonitorConfig(interval=self.settings.refresh_interval)
        if self.replay is None:
            return DevicesScreen(config)
        from gaudi_tui.core.devices.sources.replay import ReplayFeed, snapshots

        frames = snapshots(self.replay)  # already read once by the CLI, which reported any error
        return DevicesScreen(
            config, lambda on_update, cancel: ReplayFeed(frames, config.interval, on_update, cancel)
        )

    def _use_theme(self, name: str) -> None:
        if name in self.available_themes:
            self.theme = name
        else:
            self._problems.append(
                f"theme {name!r} is not one of: {', '.join(sorted(self.available_themes))}; using {self.theme}"
            )

    def on_mount(self) -> None:
        if self._given_accelerator is not None:
            self.accelerator = self._given_accelerator
        else:
            self.call_after_refresh(self.detect_accelerator)
        self.theme_changed_signal.subscribe(self, self._save_theme)
        for problem in self._problems:
            self.notify(problem, title="Settings: using the default", severity="warning", timeout=30)
        if self.settings.keys:
            self.call_after_refresh(self._check_keymap)

    def _check_keymap(self) -> None:
        from gaudi_tui.ui.bindings import binding_ids, clashes

        for clash in clashes(self.settings.keys):
            self.notify(
                f"[keys] in config.toml gives one key to two bindings, {clash}; the remapped one wins.",
                title="Settings",
                severity="warning",
                timeout=30,
                markup=False,
            )
        unknown = sorted(set(self.settings.keys) - binding_ids())
        if unknown:
            self.notify(
                f"[keys] in config.toml names no binding: {', '.join(unknown)}. `?` lists the keys in force; "
                "docs: README, Themes and keys.",
                title="Settings",
                severity="warning",
                timeout=30,
                markup=False,
            )

    def _save_theme(self, theme: Theme) -> None:
        """The palette's theme persists: written into config.toml (comments kept), off the UI thread."""
        if self.loaded is None or theme.name == self.settings.theme:
            return
        self.settings = replace(self.settings, theme=theme.name)
        self._write_theme(theme.name)

    @work(thread=True, exclusive=True, exit_on_error=False, group="settings", description="save the theme")
    def _write_theme(self, name: str) -> None:
        assert self.loaded is not None
        why = None if self.loaded.parsed else f"{self.loaded.path} has a TOML error; fix it to save the theme"
        why = why or settings_mod.save_theme(name, self.loaded.path)
        if why:
            self.call_from_thread(self.notify, f"Theme not saved: {why}", severity="warning", markup=False)
        elif self.loaded.origins.get("theme") == "environment":
            self.call_from_thread(
                self.notify, "Theme saved, but $GAUDI_TUI_THEME overrides it at the next start.", markup=False
            )

    @work(
        thread=True, exclusive=True, exit_on_error=False, group="accelerator", description="accelerator probe"
    )
    def detect_accelerator(self) -> None:
        from gaudi_tui.core import accelerator as accel_mod

        found = accel_mod.probe(cancel=get_current_worker().cancelled_event)
        log.info("accelerator: %s (%s)", found.kind, found.reason)
        self.call_from_thread(setattr, self, "accelerator", found)

    def action_help(self) -> None:
        from gaudi_tui.ui.screens.help import HelpScreen

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
