"""One message in the chat log: who, the text (answers rendered as Markdown), and its metrics."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Markdown, Static

from gaudi_tui.core.chat.store import StoredMessage

STATUS_WORDS = {"partial": "interrupted", "error": "failed"}


class LiveText(Widget):
    """An answer while it streams: its text so far, plain. Text that fits the lines it already has
    repaints this widget alone; only a new line lays the chat log out again (a layout re-arranges
    every earlier message, which a CPU-only engine on the same host pays for: bench/chat.py)."""

    DEFAULT_CSS = "LiveText { height: auto; }"

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self.text = text

    def render(self) -> Content:
        return Content(self.text)

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        """Textual lays the whole screen out again when a widget's virtual size changes; for this
        widget (not scrollable, just sized by the layout that grew it) that second layout would only
        repeat the first, at every new line of an answer (bench/chat.py counts the frames)."""
        return super()._size_updated(size, virtual_size, container_size, layout=False)

    def append(self, text: str) -> None:
        """Add streamed text; a layout only when it needs another line (the log grows)."""
        self.text += text
        self.refresh()  # a repaint, which also forgets the height measured for the old text
        width, height = self.content_size
        if not width or self.get_content_height(self.size, self.size, width) != height:
            self.refresh(layout=True)


class MessageView(Vertical):
    """A question (plain text) or an answer: Markdown, or `LiveText` while it streams."""

    DEFAULT_CSS = """
    MessageView { height: auto; margin: 0 0 1 0; }
    MessageView > .message-who { text-style: bold; color: $primary; }
    MessageView.-user > .message-who { color: $secondary; }
    MessageView > .message-text { padding: 0 0 0 2; }
    MessageView > Markdown { margin: 0; padding: 0 0 0 2; }
    MessageView > LiveText { padding: 0 0 0 2; }
    MessageView > .message-meta { color: $text-muted; padding: 0 0 0 2; }
    MessageView > .message-note { color: $warning; padding: 0 0 0 2; }
    """

    def __init__(
        self, role: str, who: str, text: str = "", meta: str = "", note: str = "", live: bool = False
    ) -> None:
        super().__init__(classes=f"-{role}")
        self.role = role
        self.who = who
        self.text = text
        self.meta = meta
        self.note = note
        self.live = live

    @classmethod
    def from_stored(cls, message: StoredMessage) -> MessageView:
        if message.role == "user":
            return cls("user", "You", message.content)
        parts = [message.metrics.summary()] if message.metrics else []
        if message.status in STATUS_WORDS and not (message.metrics and message.metrics.stopped):
            parts.append(STATUS_WORDS[message.status])
        return cls(
            "assistant", message.model or "assistant", message.content, " · ".join(parts), message.note or ""
        )

    def compose(self) -> ComposeResult:
        yield Static(self.who, classes="message-who", markup=False)
        if self.role == "user":
            yield Static(self.text, classes="message-text", markup=False)
        elif self.live:
            yield LiveText(self.text)
        else:
            yield Markdown(self.text)
        yield Static(self.meta, classes="message-meta", markup=False)
        yield Static(self.note, classes="message-note", markup=False)

    def on_mount(self) -> None:
        self.query_one(".message-meta").display = bool(self.meta)
        self.query_one(".message-note").display = bool(self.note)

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        """While it streams, as `LiveText`'s: the layout that grew it has placed it."""
        return super()._size_updated(size, virtual_size, container_size, layout=layout and not self.live)

    def append(self, text: str) -> None:
        """Add streamed text to the live answer."""
        self.text += text
        self.query_one(LiveText).append(text)

    async def finish(self, text: str, meta: str, note: str = "") -> None:
        """The answer ended with `text`: draw it as Markdown (parsed once, here) with its metrics."""
        if not self.is_attached:  # the screen is going away (the app quit during the answer)
            return
        if self.live:
            self.live = False
            self.text = text
            with self.app.batch_update():  # one frame: the plain text turns into Markdown in place
                await self.mount(Markdown(text), after=self.query_one(LiveText))
                await self.query_one(LiveText).remove()
        self.set_meta(meta, note)

    def set_meta(self, meta: str, note: str = "") -> None:
        self.meta, self.note = meta, note
        for selector, text in ((".message-meta", meta), (".message-note", note)):
            widget = self.query_one(selector, Static)
            widget.update(text)
            widget.display = bool(text)
