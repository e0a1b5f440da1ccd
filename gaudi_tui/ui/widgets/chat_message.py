"""One message in the chat log: who, the text (answers rendered as Markdown), and its metrics."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from gaudi_tui.core.chat.store import StoredMessage

STATUS_WORDS = {"partial": "interrupted", "error": "failed"}


class MessageView(Vertical):
    """A question (plain text) or an answer (Markdown, streamable)."""

    DEFAULT_CSS = """
    MessageView { height: auto; margin: 0 0 1 0; }
    MessageView > .message-who { text-style: bold; color: $primary; }
    MessageView.-user > .message-who { color: $secondary; }
    MessageView > .message-text { padding: 0 0 0 2; }
    MessageView > Markdown { margin: 0; padding: 0 0 0 2; }
    MessageView > .message-meta { color: $text-muted; padding: 0 0 0 2; }
    MessageView > .message-note { color: $warning; padding: 0 0 0 2; }
    """

    def __init__(self, role: str, who: str, text: str = "", meta: str = "", note: str = "") -> None:
        super().__init__(classes=f"-{role}")
        self.role = role
        self.who = who
        self.text = text
        self.meta = meta
        self.note = note

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
        else:
            yield Markdown(self.text)
        yield Static(self.meta, classes="message-meta", markup=False)
        yield Static(self.note, classes="message-note", markup=False)

    def on_mount(self) -> None:
        self.query_one(".message-meta").display = bool(self.meta)
        self.query_one(".message-note").display = bool(self.note)

    def stream(self) -> MarkdownStream:
        """A stream that appends Markdown to this answer as tokens arrive."""
        return Markdown.get_stream(self.query_one(Markdown))

    def set_meta(self, meta: str, note: str = "") -> None:
        self.meta, self.note = meta, note
        for selector, text in ((".message-meta", meta), (".message-note", note)):
            widget = self.query_one(selector, Static)
            widget.update(text)
            widget.display = bool(text)
