"""The gaudi-tui App: six mode screens, global bindings, command palette, shared state, and the
user's settings applied (theme, keymap, device refresh, replay)."""

from __future__ import annotations

import importlib
import logging
import socket
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from textual import work
from textual.app import SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.theme import Theme
from textual.worker import get_current_worker

from gaudi_tui.core.appearance import Appearance
from gaudi_tui.core.devices.feed import MonitorConfig
from gaudi_tui.ui.alerts import PanelAlerts
from gaudi_tui.ui.gil_switching import SWITCHING, Hold
from gaudi_tui.ui.panel_app import PanelApp
from gaudi_tui.ui.screens.devices import DevicesScreen

if TYPE_CHECKING:  # these load on use, after the first frame: the probe, the replay, the settings
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.devices.early_query import EarlyQuery
    from gaudi_tui.core.devices.feed import MonitorUpdate
    from gaudi_tui.core.devices.sources.replay import Replay
    from gaudi_tui.core.settings import Loaded, Settings

log = logging.getLogger(__name__)

START_SWITCH_FOR_S = 1.0
"""For the first second the GIL changes hands every 0.5 ms instead of every 5 ms (`gil_switching`):
the first frames go to the terminal through Textual's output thread while this thread builds the
rest (the settings, the Devices map), and each of that thread's writes would otherwise wait up to
5 ms for the GIL (bench/startup.py: ~15 ms later on the terminal)."""
PROBE_AFTER_S = 2.0
"""The accelerator probe starts when the first screen has drawn, or this long after the first frame."""

SCREENS_BY_KEY = (
    ("1", "devices", "Devices"),
    ("2", "checklist", "Checklist"),
    ("3", "chat", "Chat"),
    ("4", "training", "Training"),
    ("5", "fleet", "Fleet"),
    ("6", "slurm", "Slurm"),
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
        "slurm": _on_first_use("slurm", "SlurmScreen"),
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
        Binding("exclamation_mark", "notifications", "Alerts", id="app.alerts", key_display="!", show=False),
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
        appearance: Appearance | None = None,
        alerts: bool | None = None,
        early: EarlyQuery | None = None,
    ) -> None:
        """`settings`: what `core.settings.load()` read; None = the built-in defaults, and a theme
        picked in the palette is not saved (tests). `appearance`: the theme and keymap read before
        the first frame (the CLI); then the whole of config.toml is read, and logging configured,
        right after the first frame (`settings` must be None). `autorun_checks`: the Checklist runs
        its checks when first opened; by default the `checklist_on_open` setting when the user's
        settings are read, else off (so what tests see does not depend on the host). `replay`: feed
        the Devices screen from recorded hl-smi outputs. `prometheus`: the URL the Fleet screen reads
        (`--prometheus`; None: the `cluster.prometheus_url` setting). `alerts`: send card alerts and
        follow the notifications file (`ui/alerts.py`); by default when the CLI started the panel.
        `early`: the Devices map's first hl-smi query, started by the CLI before Textual loaded."""
        super().__init__()
        self.hostname = hostname or socket.gethostname()
        self.prometheus = prometheus
        self._given_accelerator = accelerator
        self._probe_started = False
        self._first_second: Hold | None = None
        self._autorun_checks = autorun_checks
        self.replay = replay
        self.early_query = early
        self.loaded = settings
        self._settings: Settings | None = settings.settings if settings else None
        self._read_later = appearance is not None and settings is None
        self._problems = [str(p) for p in settings.problems] if settings else []
        self.first_frame_shown = False
        self.panel_alerts = PanelAlerts(self)
        self._alerts_on = appearance is not None if alerts is None else alerts
        self._waiting_for_first_frame: list[Callable[[], object]] = []
        # The Devices mode is built from the settings (refresh, replay). Textual keeps the modes in
        # `_modes` (copied from MODES per app); subclasses (tests) that give their own screen keep it.
        if self._modes.get("devices") is DevicesScreen:
            self._modes["devices"] = self._devices_screen
        for mode, make in self._modes.items():
            if mode != self.DEFAULT_MODE and callable(make):
                self._modes[mode] = partial(self._styled_as_made, make)
        if appearance is None:
            appearance = Appearance(self.settings.theme, self.settings.keys)
        self._keys = dict(appearance.keys)
        self._early_theme = appearance.theme
        self.set_keymap(self._keys)
        self._use_theme(appearance.theme)

    @property
    def settings(self) -> Settings:
        """The user's settings. Read from config.toml at the first use after the first frame when
        the CLI started the panel; the built-in defaults in tests that give none."""
        if self._settings is None:
            if self._read_later:
                self._read_settings()
            else:
                from gaudi_tui.core.settings import Settings

                self._settings = Settings()
        assert self._settings is not None
        return self._settings

    @property
    def autorun_checks(self) -> bool:
        if self._autorun_checks is None:
            return (self.loaded is not None or self._read_later) and self.settings.checklist_on_open
        return self._autorun_checks

    def _read_settings(self) -> None:
        """After the first frame: logging to its file, the rest of config.toml, and what is wrong
        in it shown (a theme or keymap that differs from the early read is applied now)."""
        from gaudi_tui.core import logsetup
        from gaudi_tui.core import settings as settings_mod

        self._read_later = False
        logsetup.configure()
        self.loaded = settings_mod.load()
        self._settings = self.loaded.settings
        self._problems += [str(p) for p in self.loaded.problems]
        if dict(self._settings.keys) != self._keys:
            self._keys = dict(self._settings.keys)
            self.set_keymap(self._keys)
        if self._settings.theme != self._early_theme:
            self._use_theme(self._settings.theme)

    def _styled_as_made(self, make: Callable[[], Screen]) -> Screen:
        """A mode's screen, made when the mode is first opened. Its widgets take their styles from
        the stylesheet as they mount, as a pushed screen's do; Textual marks a mode's new screen stale
        all the same, and re-parses the whole stylesheet and restyles the whole app for it, twice
        (opening Training: ~40 ms of CPU). That is skipped when no theme change has come since the
        shown screen's styles were refreshed (one still to be applied takes Textual's way)."""
        screen = make()
        stack = self._screen_stacks.get(self._current_mode)
        if stack and stack[-1]._css_update_count == self._css_update_count:
            screen._css_update_count = self._css_update_count
        return screen

    def _devices_screen(self) -> DevicesScreen:
        """The Devices mode; its refresh interval is read when its feed starts, after the first frame."""
        screen = self._make_devices_screen()
        if self._css_update_count == 0:
            # Made at start-up, before any CSS is parsed, and with no theme change since the app's
            # stylesheet took its variables: its styles are current. Textual marks a mode's new screen
            # stale all the same and re-parses the whole stylesheet for it (~6 ms CPU at start-up).
            screen._css_update_count = self._css_update_count
        return screen

    def _make_devices_screen(self) -> DevicesScreen:
        if self.replay is None:
            return DevicesScreen(self._monitor_config)
        from gaudi_tui.core.devices.sources.replay import ReplayFeed, snapshots

        frames = snapshots(self.replay)  # already read once by the CLI, which reported any error
        return DevicesScreen(
            self._monitor_config,
            lambda on_update, cancel: ReplayFeed(
                frames,
                self.settings.refresh_interval,
                on_update,
                cancel,
                hold_last=self.replay is not None and self.replay.hold_last,
            ),
        )

    def _monitor_config(self) -> MonitorConfig:
        return MonitorConfig(interval=self.settings.refresh_interval)

    def _use_theme(self, name: str) -> None:
        if name in self.available_themes:
            self.theme = name
        else:
            self._problems.append(
                f"theme {name!r} is not one of: {', '.join(sorted(self.available_themes))}; using {self.theme}"
            )

    def on_mount(self) -> None:
        self._first_second = SWITCHING.hold()
        self.set_timer(START_SWITCH_FOR_S, self._first_second.release)
        if self._given_accelerator is not None:
            self.accelerator = self._given_accelerator
        self.theme_changed_signal.subscribe(self, self._save_theme)

    def on_unmount(self) -> None:
        if self._first_second is not None:
            self._first_second.release()  # an app that ends within its first second
        self.panel_alerts.stop()

    def after_first_frame(self, callback: Callable[[], object]) -> None:
        """Run `callback` once the first frame is on the terminal. (`call_after_refresh` alone is
        not enough at start-up: Textual runs those callbacks during its start-up batch, before any
        frame is drawn.)"""
        if self.first_frame_shown:
            self.call_after_refresh(callback)
        else:
            self._waiting_for_first_frame.append(callback)

    def on_ready(self) -> None:
        """Textual's Ready: the first frame is out. Now the rest of start-up: the settings and what
        screens asked for (the Devices feed and map); the accelerator probe once the first screen
        has drawn (`first_screen_drawn`), or PROBE_AFTER_S from now."""
        self.first_frame_shown = True
        waiting, self._waiting_for_first_frame = self._waiting_for_first_frame, []
        if self._given_accelerator is None:
            self.set_timer(PROBE_AFTER_S, self.first_screen_drawn)
        for callback in (self._after_first_frame, *waiting):
            self.call_after_refresh(callback)

    def first_screen_drawn(self) -> None:
        """The first screen has drawn what it is for (Devices: the cards, or why there are none).
        Now the accelerator probe, a child that imports torch (seconds of a core), which would
        otherwise take a core from the first screen's own work on a small host."""
        if self._given_accelerator is None and not self._probe_started:
            self._probe_started = True
            self.detect_accelerator()

    def _after_first_frame(self) -> None:
        self.settings  # noqa: B018 - read config.toml now if it was left for after the first frame
        for problem in self._problems:
            self.notify(problem, title="Settings: using the default", severity="warning", timeout=30)
        if self._keys:
            self._check_keymap()
        if self._alerts_on:
            self.panel_alerts.start()

    def card_update(self, update: MonitorUpdate) -> None:
        """The Devices feed's updates (in its thread): the card alerts."""
        self.panel_alerts.card_update(update)

    def _check_keymap(self) -> None:
        from gaudi_tui.ui.bindings import binding_ids, clashes

        for clash in clashes(self._keys):
            self.notify(
                f"[keys] in config.toml gives one key to two bindings, {clash}; the remapped one wins.",
                title="Settings",
                severity="warning",
                timeout=30,
                markup=False,
            )
        unknown = sorted(set(self._keys) - binding_ids())
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
        self._settings = replace(self.settings, theme=theme.name)
        self._write_theme(theme.name)

    @work(thread=True, exclusive=True, exit_on_error=False, group="settings", description="save the theme")
    def _write_theme(self, name: str) -> None:
        from gaudi_tui.core import settings as settings_mod

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

    def action_notifications(self) -> None:
        from gaudi_tui.ui.screens.notifications import NotificationsScreen

        if not isinstance(self.screen, NotificationsScreen):
            self.push_screen(NotificationsScreen(self.panel_alerts.alerts))

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
        yield SystemCommand("Alerts", "Every alert with its time (key !)", self.action_notifications)
