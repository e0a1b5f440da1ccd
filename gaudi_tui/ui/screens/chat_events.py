"""The Chat session's events (from its worker threads) as messages to the Chat screen."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.message import Message

from gaudi_tui.core.chat.backend import ChatClient
from gaudi_tui.core.chat.client import Answer
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.metrics import LoadReport


@dataclass
class LoadProgress(Message):
    client: ChatClient
    stage: str


@dataclass
class LoadDone(Message):
    client: ChatClient
    report: LoadReport | None
    error: ChatError | None


@dataclass
class AnswerChunk(Message):
    text: str


@dataclass
class AnswerWarning(Message):
    text: str


@dataclass
class AnswerDone(Message):
    answer: Answer | None
    error: ChatError | None


@dataclass
class EngineExited(Message):
    client: ChatClient
    reason: str


class PostedEvents:
    """The session's callbacks (from its worker threads) posted to the screen as messages."""

    def __init__(self, post: Callable[[Message], object]) -> None:
        self.post = post

    def load_progress(self, client: ChatClient, stage: str) -> None:
        self.post(LoadProgress(client, stage))

    def load_done(self, client: ChatClient, report: LoadReport | None, error: ChatError | None) -> None:
        self.post(LoadDone(client, report, error))

    def answer_text(self, text: str) -> None:
        self.post(AnswerChunk(text))

    def answer_warning(self, text: str) -> None:
        self.post(AnswerWarning(text))

    def answer_done(self, answer: Answer | None, error: ChatError | None) -> None:
        self.post(AnswerDone(answer, error))

    def engine_exited(self, client: ChatClient, reason: str) -> None:
        self.post(EngineExited(client, reason))
