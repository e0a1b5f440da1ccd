"""When an answer's tokens reach the Chat screen: the chat bench's headline for the whole screen.

At each frame Textual draws (after `Screen._compositor_refresh`: the dirty widgets are painted
and the frame written), it reads how much of the answer the chat message widget shows: `LiveText`'s
text while the answer streams, all of it once the Markdown that replaces it has its blocks. The
engine's own token events turn characters into tokens: each event carries its text and the count
of tokens so far (`n`, `core/chat/protocol.py`), read as the client decodes them (its `made_at`
sees every token event). The rate drawn is the tokens shown after the first frame that showed any,
over the time from that frame to the first frame that shows them all: the bare side's decode rate
is the tokens after the first, over the time from the first token to the last (`chat_bare.py`).
A screen that drew tokens late scores lower here; the engine's stamps would not see it.
"""

from __future__ import annotations

import bisect
import time


class DrawnAnswer:
    def __init__(self) -> None:
        self.chars: list[int] = []
        """The answer's length in characters after each token event, in order."""
        self.tokens: list[int] = []
        """The tokens out after each token event (its `n`)."""
        self.frames: list[tuple[float, int]] = []
        """(perf_counter, tokens shown) at each frame drawn while armed."""
        self.armed = False
        self.widget = None  # the answer's LiveText, found at the first frame that has one
        self.view = None  # its MessageView, where Markdown takes its place at the end

    def install(self) -> None:
        from textual.screen import Screen

        from gaudi_tui.core.chat import client

        made_at = client.made_at

        def seen(event, arrived):  # noqa: ANN001, ANN202 - the client's own, for every token event
            text, n = event.get("text"), event.get("n")
            if self.armed and isinstance(text, str) and isinstance(n, int):
                self.chars.append((self.chars[-1] if self.chars else 0) + len(text))
                self.tokens.append(n)
            return made_at(event, arrived)

        client.made_at = seen
        refresh = Screen._compositor_refresh  # noqa: SLF001 - the frame itself

        def drawn(screen, *args, **kwargs):  # noqa: ANN001, ANN202
            result = refresh(screen, *args, **kwargs)
            if self.armed:
                self.frames.append((time.perf_counter(), self._shown(screen)))
            return result

        Screen._compositor_refresh = drawn  # noqa: SLF001

    def arm(self) -> None:
        """Before the question is sent: this answer's events and frames from here."""
        self.chars, self.tokens, self.frames, self.widget, self.view = [], [], [], None, None
        self.armed = True

    def _shown(self, screen) -> int:  # noqa: ANN001
        """Tokens of the answer the widget shows in this frame (only whole events reach it)."""
        from textual.widgets import Markdown

        from gaudi_tui.ui.widgets.chat_message import LiveText

        if self.widget is None:
            found = screen.query(LiveText)
            if not found:
                return 0
            self.widget = found.last()
            self.view = self.widget.parent
        if self.widget.is_attached:
            chars = len(self.widget.text)
        else:  # the answer ended: Markdown took the LiveText's place, drawn once it has its blocks
            markdown = self.view.query(Markdown) if self.view is not None else []
            chars = self.chars[-1] if markdown and markdown.first().children and self.chars else 0
        event = bisect.bisect_right(self.chars, chars) - 1  # the last event whose text is all shown
        return self.tokens[event] if chars and event >= 0 else 0

    def complete(self) -> bool:
        """A frame has shown every token of the answer."""
        return bool(self.tokens) and any(n >= self.tokens[-1] for _, n in self.frames)

    def rate(self) -> float:
        """Tokens per second drawn, after the first frame that showed any (see the module)."""
        self.armed = False
        total = self.tokens[-1]
        first = next((t, n) for t, n in self.frames if n > 0)
        last = next(t for t, n in self.frames if n >= total)
        return (
            (total - first[1]) / (last - first[0]) if last > first[0] else 0.0
        )  # shown at once: not streamed
