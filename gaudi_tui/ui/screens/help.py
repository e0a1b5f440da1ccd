"""`?`: every key binding active on the current screen (as remapped by `[keys]` in config.toml),
its binding id, and what the screen is for."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from gaudi_tui.ui.screens.dialog import Dialog


def binding_rows(screen: Screen) -> list[tuple[str, str, str]]:
    """(key, description, binding id) for each binding reachable from `screen`, app-wide ones
    included; the keys are those in force, after the user's keymap."""
    rows: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for key, active in screen.active_bindings.items():
        binding: Binding = active.binding
        if binding.action in ("help_quit",) or key in seen:
            continue
        seen.add(key)
        label = binding.description or binding.action
        rows.append((binding.key_display or screen.app.get_key_display(binding), label, binding.id or ""))
    return rows


class HelpScreen(Dialog[None]):
    DEFAULT_CSS = """
    HelpScreen > .dialog { width: 72; max-height: 90%; }
    """
    BINDINGS = [
        Binding("escape,question_mark,q", "dismiss", "Close help", id="help.close"),
    ]

    def __init__(self, for_screen: Screen) -> None:
        super().__init__()
        self.for_screen = for_screen

    def compose(self) -> ComposeResult:
        title = getattr(self.for_screen, "TITLE", "") or "gaudi-tui"
        about = getattr(self.for_screen, "HELP", "")
        rows = binding_rows(self.for_screen)
        width = max((len(k) for k, _, _ in rows), default=4) + 2
        label_width = max((len(label) for _, label, _ in rows), default=4) + 2
        keys = "\n".join(f"{key:<{width}}{label:<{label_width}}{bid}" for key, label, bid in rows)
        with VerticalScroll(classes="dialog"):
            yield Static(f"Help — {title}", classes="dialog-title", markup=False)
            yield Static(about, markup=False)
            yield Static("")
            yield Static(keys, id="help-keys", markup=False)
            yield Static("")
            yield Static(
                "ctrl+p opens the command palette (a Theme picked there is saved in config.toml). Remap a key in "
                'config.toml by its id, e.g. [keys] "devices.choose" = "enter" (gaudi-tui config shows '
                "the file). Esc, ? or q closes this help.",
                markup=False,
            )
