"""What screens and widgets may use of the app: the state they share. `GaudiApp` (app.py) is the
one app; it imports the screens, so the screens type against this class instead of importing it
(no import circle)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App
from textual.reactive import reactive

if TYPE_CHECKING:
    from collections.abc import Callable

    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.devices.early_query import EarlyQuery
    from gaudi_tui.core.devices.sources.replay import Replay
    from gaudi_tui.core.settings import Settings


class PanelApp(App[int]):
    accelerator: reactive[Accelerator | None] = reactive(None)
    selected_cards: reactive[tuple[int, ...]] = reactive(tuple)
    """Module IDs of the cards chosen for jobs (Devices sets it, Training reads it)."""
    env_fixes: reactive[dict[str, str]] = reactive(dict)
    """Environment fixes the Checklist applies to jobs launched from the panel (empty = off)."""
    hostname: str
    replay: Replay | None
    early_query: EarlyQuery | None = None
    """The Devices map's first hl-smi query, started before Textual loaded (the CLI's); its feed takes it."""
    first_frame_shown: bool = False
    """True once Textual's Ready came: the first frame is on the terminal."""

    if TYPE_CHECKING:  # GaudiApp's: the settings are read after the first frame

        @property
        def settings(self) -> Settings: ...

        @property
        def autorun_checks(self) -> bool: ...

        def after_first_frame(self, callback: Callable[[], object]) -> None: ...

        def first_screen_drawn(self) -> None: ...

    @property
    def replay_label(self) -> str | None:
        """The header's replay mark: the replay's name and that it is recorded."""
        return self.replay.label() if self.replay else None
