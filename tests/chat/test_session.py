"""The chat session without Textual: a real engine with the demo model, jobs in plain threads, and
events delivered back on the test's thread the way the screen's messages are."""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gaudi_tui.core.chat.batcher import ChunkBatcher
from gaudi_tui.core.chat.client import Answer, EngineClient
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.metrics import LoadReport
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from gaudi_tui.core.chat.session import AnswerEnd, ChatSession, EngineState, Job, LiveAnswer
from gaudi_tui.core.chat.store import ChatStore
from tests.conftest import ROOT

LONG = GenerationParams(max_new_tokens=200, min_new_tokens=200)


class Inbox:
    """ChatEvents that queue each call for the owner's thread, as the screen's messages do."""

    def __init__(self) -> None:
        self.events: queue.Queue[tuple[str, tuple[Any, ...]]] = queue.Queue()

    def load_progress(self, client: EngineClient, stage: str) -> None:
        self.events.put(("progress", (client, stage)))

    def load_done(self, client: EngineClient, report: LoadReport | None, error: ChatError | None) -> None:
        self.events.put(("loaded", (client, report, error)))

    def answer_text(self, text: str) -> None:
        self.events.put(("add_text", (text,)))

    def answer_warning(self, text: str) -> None:
        self.events.put(("add_warning", (text,)))

    def answer_done(self, answer: Answer | None, error: ChatError | None) -> None:
        self.events.put(("finish", (answer, error)))

    def engine_exited(self, client: EngineClient, reason: str) -> None:
        self.events.put(("exited", (client, reason)))


class Threads:
    """A Runner: each job in its own thread, with a cancel event the test can set."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.threads: list[threading.Thread] = []
        self.held: list[threading.Thread] | None = None
        """While a list, jobs wait there for `release` (as the screen's answer waits for a frame)."""

    def __call__(self, job: Job, name: str) -> None:
        self.names.append(name)
        thread = threading.Thread(target=job, args=(threading.Event(),), daemon=True)
        self.threads.append(thread)
        if self.held is not None:
            self.held.append(thread)
        else:
            thread.start()

    def release(self) -> None:
        held, self.held = self.held or [], None
        for thread in held:
            thread.start()

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=30)


def deliver(
    session: ChatSession, inbox: Inbox, until: Callable[[str, Any], bool], timeout: float = 90
) -> Any:
    """Hand events to the session's methods until `until(event, result)` holds; returns that result."""
    deadline = time.monotonic() + timeout
    while True:
        event, args = inbox.events.get(timeout=max(deadline - time.monotonic(), 0.01))
        result = getattr(session, event)(*args)
        if until(event, result):
            return result


@pytest.fixture
def store(tmp_path: Path) -> ChatStore:
    return ChatStore(tmp_path / "chat.sqlite3")


def make_session(store: ChatStore, tmp_path: Path) -> tuple[ChatSession, Inbox, Threads]:
    inbox, threads = Inbox(), Threads()
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return ChatSession(store, inbox, threads, lambda: env, tmp_path / "chat-engine.log"), inbox, threads


def test_question_loads_then_answers_stops_and_close_keeps_the_partial(
    store: ChatStore, tmp_path: Path
) -> None:
    session, inbox, threads = make_session(store, tmp_path)
    conversation = store.create()
    assert "sending a message loads the demo model" in session.status_text().status

    question, live = session.ask(conversation.id, "What is hl-smi?")
    assert live is None and session.state is EngineState.LOADING and session.pending == conversation.id
    assert [m.content for m in store.messages(conversation.id)] == ["What is hl-smi?"] == [question.content]
    assert session.status_text().status.startswith("Loading demo model…")

    started = deliver(session, inbox, lambda event, result: event == "loaded")
    assert isinstance(started, LiveAnswer) and session.state is EngineState.GENERATING
    assert session.pending is None and started.conversation_id == conversation.id
    with pytest.raises(ChatError, match="still streaming"):
        session.ask(conversation.id, "And another?")

    end = deliver(session, inbox, lambda event, result: event == "finish")
    assert isinstance(end, AnswerEnd) and end.status == "complete" and end.error is None
    stored = store.messages(conversation.id)[-1]
    assert stored.content == end.live.text and "hl-smi" in stored.content and stored.status == "complete"
    assert stored.model == "demo model" and stored.metrics == end.metrics
    assert session.state is EngineState.READY and session.live is None
    assert "TTFT" in session.status_text().status
    assert threads.names == ["load", "generate"]

    # A long answer stops on request; the partial answer is stored and the model stays loaded.
    store.set_params(conversation.id, LONG)
    _, live = session.ask(conversation.id, "What is HL-225?")
    assert live is not None
    deliver(session, inbox, lambda event, result: event == "add_text" and bool(result.text))
    assert session.stop() and not session.stop()  # once is enough
    assert session.status_text().status.startswith("Stopping…")
    end = deliver(session, inbox, lambda event, result: event == "finish")
    assert end.status == "partial" and end.metrics is not None and end.metrics.stopped
    assert 0 < end.metrics.tokens_out < 200 and session.state is EngineState.READY

    # A stop that comes before the answer's job has begun (the screen starts it once the question
    # is drawn) is not lost: the answer stops at once.
    threads.held = []
    _, live = session.ask(conversation.id, "What is HL-225?")
    assert live is not None and session.stop()
    threads.release()
    end = deliver(session, inbox, lambda event, result: event == "finish")
    assert end.status == "partial" and end.metrics is not None and end.metrics.stopped
    assert end.metrics.tokens_out < 50 and session.state is EngineState.READY

    # Closing in the middle of an answer keeps what arrived and ends the engine.
    _, live = session.ask(conversation.id, "What is hl-smi?")
    deliver(session, inbox, lambda event, result: event == "add_text" and bool(result.text))
    client = session.client
    assert client is not None and live is not None
    session.close()
    assert not client.alive and session.client is None
    kept = store.messages(conversation.id)[-1]
    assert kept.status == "partial" and kept.content == live.text and "panel was closed" in (kept.note or "")
    threads.join()


def test_a_failed_load_keeps_the_question_and_says_what_to_do(store: ChatStore, tmp_path: Path) -> None:
    session, inbox, threads = make_session(store, tmp_path)
    session.options = LoadOptions(model=str(tmp_path / "no-such-model"))
    conversation = store.create()
    session.ask(conversation.id, "Hello?")
    assert deliver(session, inbox, lambda event, result: event == "loaded") is None
    assert session.state is EngineState.FAILED and session.client is None and session.pending is None
    text = session.status_text()
    assert "Your message is saved" in text.banner and "l retries" in text.banner
    assert "load failed" in text.card
    assert [m.content for m in store.messages(conversation.id)] == ["Hello?"]
    threads.join()


def test_an_engine_that_dies_is_reported_and_a_new_one_loads(store: ChatStore, tmp_path: Path) -> None:
    session, inbox, threads = make_session(store, tmp_path)
    session.load(LoadOptions())
    assert deliver(session, inbox, lambda event, result: event == "loaded") is None  # nothing waited
    first = session.client
    assert first is not None and first.pid is not None and session.state is EngineState.READY
    os.kill(first.pid, signal.SIGKILL)
    assert deliver(session, inbox, lambda event, result: event == "exited") is True
    assert session.state is EngineState.DEAD and "killed by SIGKILL" in session.status_text().banner

    session.load(session.options)
    deliver(session, inbox, lambda event, result: event == "loaded")
    second = session.client
    assert second is not None and second.pid != first.pid and session.status_text().banner == ""
    assert session.unload() and session.state is EngineState.NONE and not session.unload()
    threads.join()
    assert not second.alive


def test_batcher_emits_at_most_every_interval_and_saves_the_text_so_far(store: ChatStore) -> None:
    conversation = store.create()
    message = store.add_message(conversation.id, "assistant", "", status="partial")
    now = [100.0]
    emitted: list[str] = []
    batcher = ChunkBatcher(store, message.id, emitted.append, chunk_s=0.2, save_s=1.0, clock=lambda: now[0])
    batcher.add("Hel")  # the first text goes out at once
    now[0] += 0.1
    batcher.add("lo")
    batcher.add(", ")
    assert emitted == ["Hel"]
    now[0] += 0.15
    batcher.add("wor")
    assert emitted == ["Hel", "lo, wor"] and store.messages(conversation.id)[0].content == ""
    now[0] += 1.0
    batcher.add("ld")
    assert store.messages(conversation.id)[0].content == "Hello, world"
    batcher.add("!")
    batcher.flush()
    assert "".join(emitted) == "Hello, world!"
