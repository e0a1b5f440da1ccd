"""`!`: every alert the panel knows (the notifications file's, newest first), with its time."""

from __future__ import annotations

import time
from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.ui.screens.dialog import Dialog


def rows(alerts: Sequence[Alert]) -> str:
    if not alerts:
        return (
            "No alerts yet. Jobs send theirs from their supervisor; card alerts come from the panel "
            "and `gaudi-tui watch`. What fires and where it goes: [alerts] in config.toml (README, Alerts)."
        )
    lines = []
    for alert in sorted(alerts, key=lambda a: a.time, reverse=True):
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(alert.time))
        lines.append(f"{stamp}  {alert.severity:<8}  {alert.title}\n    {alert.text}")
    return "\n".join(lines)


class NotificationsScreen(Dialog[None]):
    DEFAULT_CSS = """
    NotificationsScreen > .dialog { width: 100; max-height: 90%; }
    """
    BINDINGS = [Binding("escape,exclamation_mark,q", "dismiss", "Close", id="notifications.close")]

    def __init__(self, alerts: Sequence[Alert]) -> None:
        super().__init__()
        self.alerts = tuple(alerts)

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog"):
            yield Static(f"Alerts — {len(self.alerts)}", classes="dialog-title", markup=False)
            yield Static(rows(self.alerts), id="notifications-list", markup=False)
            yield Static("Esc, ! or q closes.", classes="dialog-hint", markup=False)
