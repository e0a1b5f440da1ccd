"""What screens and widgets may use of the app: the state they share. `GaudiApp` (app.py) is the
one app; it imports the screens, so the screens type against this class instead of importing it
(no import circle)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App
from textual.reactive import reactive

if TYPE_CHECKING:
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.devices.sources.replay import Replay
    from gaudi_tui.core.settings import Settings


class PanelApp(App[int]):
    accelerator: reactive[Accelerator | None] = reactive(None)
    selected_cards: reactive[tuple[int, ...]] = reactive(tuple)
    """Module IDs of the cards chosen for jobs (Devices sets it, Training reads it)."""
    env_fixes: reactive[dict[str, str]] = reactive(dict)
    """Environment fixes the Checklist applies to jobs launched from the panel (empty = off)."""
    hostname: str
    settings: Settings
    autorun_checks: bool
    replay: Replay | None

    @property
    def replay_label(self) -> str | None:
        """The header's replay mark: the replay's name and that it is recorded."""
        return f"{self.replay.name} (recorded hl-smi, not this host)" if self.replay else None
