"""The panel screens' footer: Textual's Footer, whose keys are composed once the first frame is out,
once for a burst of binding changes, and not at all when the keys it shows stay the same.

Composing a footer's keys costs about 3 ms of CPU a key on these cores (each FooterKey mounts, binds
its `compact` and restyles itself); a panel screen shows a dozen. A bare Textual app's first frame
has an empty footer bar too (its keys come with the next frame), so the panel's first frame is drawn
the same way: the bar at once, its keys right after (bench/startup.py measures both moments). Textual
recomposes the footer once per binding signal (a screen resumed, a focus change, a callback): at
start-up the map's focus and the screen's bindings change one after the other, and a screen opening
sends three, though the keys it shows are the same.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer

from gaudi_tui.ui.panel_app import PanelApp


class PanelFooter(Footer):
    _waiting = False
    _recompose_queued = False
    _shown: tuple[tuple[str, str, str, bool], ...] | None = None

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
            self.call_after_refresh(self._recompose_once, screen)

    async def _recompose_once(self, screen: Screen) -> None:
        self._recompose_queued = False
        shown = tuple(
            (binding.key, binding.action, binding.description, enabled)
            for _node, binding, enabled, _tip in screen.active_bindings.values()
            if binding.show
        )
        if shown != self._shown:
            self._shown = shown
            await self.recompose()
