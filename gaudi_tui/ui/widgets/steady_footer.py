"""A Footer that recomposes only when the keys it shows change.

Textual's Footer remounts every key on each bindings signal (a screen resumed, a focus change, a
callback), three times while a screen's first frame is made; a screen whose shown keys stay the
same pays for one.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class SteadyFooter(Footer):
    def __init__(self) -> None:
        super().__init__()
        self._shown: tuple[tuple[str, str, str, bool], ...] | None = None

    def bindings_changed(self, screen: Screen) -> None:
        shown = tuple(
            (binding.key, binding.action, binding.description, enabled)
            for _node, binding, enabled, _tip in screen.active_bindings.values()
            if binding.show
        )
        if self.app.app_focus:
            if shown == self._shown:
                return
            self._shown = shown
        super().bindings_changed(screen)
