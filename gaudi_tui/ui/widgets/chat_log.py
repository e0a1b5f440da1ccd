"""The chat log: a conversation's messages, and the live answer streamed into it."""

from __future__ import annotations

from collections.abc import Sequence

from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.geometry import Size
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from gaudi_tui.core.chat.session import LiveAnswer
from gaudi_tui.core.chat.store import StoredMessage
from gaudi_tui.ui.widgets.chat_message import MessageView

EMPTY_HINT = (
    "No messages yet. i (or Enter on a conversation) moves to the message box; your first "
    "message loads the model. m chooses the model and load options, p shows the parameters, "
    "? lists every key."
)
DEMO_HINT = (
    "The demo model is a tiny model shipped to try the panel offline: it knows only the questions "
    "it was trained on, like these (s, then ↑↓ and Enter sends one). Asked anything else, it answers "
    "with one of its answers that does not fit. m chooses a real model."
)


def empty_state(starters: Sequence[str] | None) -> Vertical:
    """What an empty conversation shows: the keys, and with the demo model (`starters`), questions it knows."""
    hint = Static(EMPTY_HINT, classes="chat-hint", markup=False)
    if starters is None:
        return Vertical(hint, classes="chat-empty")
    options = [Option(Content(q), id=str(i)) for i, q in enumerate(starters)]
    demo = Static(DEMO_HINT, classes="chat-hint", markup=False)
    return Vertical(hint, demo, OptionList(*options, id="chat-starters"), classes="chat-empty")


class FollowingScroll(VerticalScroll):
    """A log that follows what grows at its end: a reader who scrolled up stays put; one at the end
    stays there."""

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        """The layout that grew the log (a new line, a new message) keeps a reader at its end there.
        A scroll asked for after the next refresh could run before that layout and stop a line short
        (Textual's anchor would do this too, but it lays a short conversation out at the bottom)."""
        following = self.scroll_y >= self.max_scroll_y - 1
        resized = super()._size_updated(size, virtual_size, container_size, layout)
        if following and self.scroll_y < self.max_scroll_y:
            self.scroll_end(animate=False, immediate=True)
        return resized


class ChatLog(FollowingScroll):
    """The messages of the shown conversation; the live answer, while it belongs here, drawn as it
    streams. A reader who scrolled up stays put; one at the end follows the answer."""

    def __init__(self, id: str | None = None) -> None:  # noqa: A002 - Textual's own name
        super().__init__(id=id, can_focus=True)
        self.live_view: MessageView | None = None
        """Where the live answer is drawn, while its conversation is shown."""

    async def show(self, messages: Sequence[StoredMessage], empty: Vertical, live: LiveAnswer | None) -> None:
        """Draw `messages` (`empty` when there are none), and `live` after them when given."""
        self.live_view = None
        views = [MessageView.from_stored(m) for m in messages]
        await self.remove_children()
        await self.mount_all(views or [empty])
        if live is not None:
            await self.draw_live(live)
        self.scroll_end(animate=False)

    async def add_question(self, stored: StoredMessage) -> None:
        await self.query(".chat-empty").remove()
        await self.mount(MessageView.from_stored(stored))
        self.scroll_end(animate=False)

    async def draw_live(self, live: LiveAnswer) -> None:
        self.live_view = MessageView("assistant", live.label, live.text, live=True)
        await self.mount(self.live_view)
        self.scroll_end(animate=False)

    def append(self, text: str) -> None:
        """Streamed text of the live answer, when it is shown."""
        if self.live_view is not None:
            self.live_view.append(text)

    async def finish(self, text: str, meta: str, note: str) -> None:
        """The live answer ended with `text`: drawn as Markdown with its metrics."""
        view, self.live_view = self.live_view, None
        if view is not None:
            await view.finish(text, meta, note)
