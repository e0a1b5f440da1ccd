"""The panel screens' footer: Textual's Footer, whose keys are composed once the first frame is out,
and composed once for a burst of binding changes.

Composing a footer's keys costs about 3 ms of CPU a key on these cores (each FooterKey mounts, binds
its `compact` and restyles itself); a panel screen shows a dozen. A bare Textual app's first frame
has an empty footer bar too (its keys come with the next frame), so the panel's first frame is drawn
the same way: the bar at once, its keys right after (bench/startup.py measures both moments). Textual
recomposes the footer once per binding change; at start-up the map's focus and the screen's bindings
change one after the other, and each recompose would build every key again.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer

from gaudi_tui.ui.panel_app import PanelApp


class PanelFooter(Footer):
    _waiting = False
    _recompose_queued = False

    def bindings_changed(self, screen: Screen) -> None:
        app = self.app
        if not isinstance(app, PanelApp) or app.first_frame_shown:
            self._changed(screen)
        elif not self._waiting:
            self._waiting = True
            # Run in the footer's own message loop: Footer's compose binds data to the active one.
            app.after_first_frame(lambda: self.call_later(self._bindings_after_first_frame, screen))

    def _bindings_after_first_frame(self, screen: Screen) -> None:
        self._waiting = False
        self._changed(screen)

    def _changed(self, screen: Screen) -> None:
        """Footer.bindings_changed, with one recompose queued at a time (it reads the bindings in
        force when it runs, so a change that comes while one is queued is in it)."""
        self._bindings_ready = True
        if not screen.app.app_focus or not (self.is_attached and screen is self.screen):
            return
        if not self._recompose_queued:
            self._recompose_queued = True
            self.call_after_refresh(self._recompose_once)

    async def _recompose_once(self) -> None:
        self._recompose_queued = False
        await self.recompose()
