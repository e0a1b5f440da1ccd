"""The Chat screen's state machine, without the screen: the engine's life cycle, the question that
waits for a load, and the answer being streamed (batched for the pane, saved as it grows).

The split follows toolong's: this object owns the state and changes it only on its owner's
thread; blocking work (start and load an engine, stream an answer, shut an engine down) runs
where the owner's `Runner` puts it (a Textual worker thread in the panel) and reports through
`ChatEvents` with plain values. The owner turns each event into a message for its own thread
and hands it back to the matching method here (`progress`, `loaded`, `add_text`, ...), then
draws what that returns.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Protocol

from gaudi_tui.core.chat.backend import ChatClient, open_client
from gaudi_tui.core.chat.batcher import ChunkBatcher
from gaudi_tui.core.chat.client import Answer
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.metrics import AnswerMetrics, LoadReport
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from gaudi_tui.core.chat.store import ChatStore, Status, StoredMessage, prompt_messages
from gaudi_tui.core.demo import DEMO_LABEL, DEMO_MODEL_ID

CLOSE_WAIT_S = 2.0

Job = Callable[[threading.Event], None]
"""Blocking work; the event asks it to give up (cancel a load, stop an answer)."""
Runner = Callable[[Job, str], None]
"""Runs a job off the owner's thread; the name ("load", "generate", "unload") groups jobs."""

log = logging.getLogger(__name__)


class EngineState(str, Enum):
    NONE = "none"
    LOADING = "loading"
    READY = "ready"
    GENERATING = "generating"
    FAILED = "failed"
    DEAD = "dead"


class ChatEvents(Protocol):
    """What a session reports from its jobs, from whatever thread runs them."""

    def load_progress(self, client: ChatClient, stage: str) -> None: ...

    def load_done(self, client: ChatClient, report: LoadReport | None, error: ChatError | None) -> None: ...

    def answer_text(self, text: str) -> None: ...

    def answer_warning(self, text: str) -> None: ...

    def answer_done(self, answer: Answer | None, error: ChatError | None) -> None: ...

    def engine_exited(self, client: ChatClient, reason: str) -> None: ...


@dataclass
class LiveAnswer:
    """The answer being streamed: where it is stored, and what has arrived so far."""

    conversation_id: int
    message_id: int
    label: str
    text: str = ""
    stopping: bool = False
    warnings: list[str] = field(default_factory=list)
    stop_requested: threading.Event = field(default_factory=threading.Event)
    """Set by `ChatSession.stop`; the answer's job sees it even when the stop came before it began."""


@dataclass(frozen=True)
class EitherSet:
    """Set when either event is: the job's cancel (its owner goes away) or the answer's stop."""

    first: threading.Event
    second: threading.Event

    def is_set(self) -> bool:
        return self.first.is_set() or self.second.is_set()


@dataclass(frozen=True)
class AnswerEnd:
    """How an answer ended, once it is stored."""

    live: LiveAnswer
    text: str
    """The answer as stored."""
    status: Status
    metrics: AnswerMetrics | None
    note: str | None
    error: ChatError | None


@dataclass(frozen=True)
class StatusText:
    """The words the pane shows for the engine: status line, model card, problem banner."""

    status: str
    card: str
    banner: str


def model_label(options: LoadOptions) -> str:
    """The name shown for a model not loaded yet ("demo model" for the demo)."""
    return DEMO_LABEL if options.model.strip() in ("", DEMO_MODEL_ID) else options.model


class ChatSession:
    """One chat panel's engine and answer, over a store it does not own."""

    def __init__(
        self,
        store: ChatStore,
        events: ChatEvents,
        run: Runner,
        env: Callable[[], Mapping[str, str]] = dict,
        log_path: Path | None = None,
    ) -> None:
        self.store = store
        self.events = events
        self.run = run
        self.env = env
        """The engine's extra environment, read at each load (the Checklist's fixes can change)."""
        self.log_path = log_path
        self.options = LoadOptions()
        self.state = EngineState.NONE
        self.client: ChatClient | None = None
        self.report: LoadReport | None = None
        self.load_stage = ""
        self.problem = ""
        self.live: LiveAnswer | None = None
        self.last_metrics: AnswerMetrics | None = None
        self.pending: int | None = None
        """The conversation whose question waits for the model to load."""
        self.answering: ChatClient | None = None
        """The engine the live answer comes from."""

    @property
    def uses_demo_model(self) -> bool:
        label = self.report.label if self.report else model_label(self.options)
        return label == DEMO_LABEL

    # ---- questions and answers ------------------------------------------------------------------
    def ask(self, conversation_id: int, text: str) -> tuple[StoredMessage, LiveAnswer | None]:
        """Store the question first (nothing is lost if loading fails), then answer it now when the
        model is ready, or once it has loaded (loading it unless that is already happening).
        Returns the stored question and the answer that started, if one did."""
        if self.live is not None:
            raise ChatError("busy", "An answer is still streaming: wait for it, or press Esc to stop it.")
        try:
            stored = self.store.add_message(conversation_id, "user", text)
            if self.state is EngineState.READY:
                return stored, self._start_answer(conversation_id)
        except sqlite3.Error as exc:  # a full disk, a locked or damaged file: say so, keep the panel
            raise ChatError("store", f"Cannot save the message in {self.store.path}: {exc}") from None
        self.pending = conversation_id
        if self.state is not EngineState.LOADING:
            self.load(self.options)
        return stored, None

    def _start_answer(self, conversation_id: int) -> LiveAnswer:
        client, report = self.client, self.report
        assert client is not None and report is not None
        conversation = self.store.conversation(conversation_id)
        messages = prompt_messages(conversation, self.store.messages(conversation_id))
        stored = self.store.add_message(
            conversation_id,
            "assistant",
            "",
            status="partial",
            model=report.label,
            provenance=report.provenance,
        )
        live = self.live = LiveAnswer(conversation_id, stored.id, report.label)
        self.answering = client
        self.state = EngineState.GENERATING
        params = conversation.params
        self.run(lambda cancel: self._generate(client, messages, params, live, cancel), "generate")
        return live

    def _generate(
        self,
        client: ChatClient,
        messages: Sequence[Mapping[str, str]],
        params: GenerationParams,
        live: LiveAnswer,
        cancel: threading.Event,
    ) -> None:
        batcher = ChunkBatcher(self.store, live.message_id, self.events.answer_text)
        try:
            answer = client.generate(
                messages,
                params,
                on_text=batcher.add,
                cancel=EitherSet(cancel, live.stop_requested),
                on_warning=self.events.answer_warning,
            )
        except ChatError as exc:
            batcher.flush()
            self.events.answer_done(None, exc)
            return
        except Exception as exc:  # a client's bug must still end the answer, or every later question waits
            log.exception("the answer failed unexpectedly")
            batcher.flush()
            why = f"{type(exc).__name__}: {exc}"[:200]
            self.events.answer_done(None, ChatError("internal", f"The answer failed ({why}); ask again."))
            return
        batcher.flush()
        self.events.answer_done(answer, None)

    def add_text(self, text: str) -> LiveAnswer | None:
        """Text of the live answer arrived; returns the answer (None if it already ended)."""
        if self.live is not None:
            self.live.text += text
        return self.live

    def add_warning(self, text: str) -> None:
        if self.live is not None:
            self.live.warnings.append(text)

    def finish(self, answer: Answer | None, error: ChatError | None) -> AnswerEnd | None:
        """Store how the live answer ended (its text, status, metrics or the failure)."""
        live, self.live = self.live, None
        # `m` during the answer started another engine: its state is the new engine's, not this one's
        current = self.answering is self.client
        self.answering = None
        if live is None:
            return None
        if answer is not None:
            status: Status = "partial" if answer.stopped else "complete"
            note = " ".join(live.warnings) or None
            self.store.update_message(live.message_id, answer.text, status, answer.metrics, note)
            self.last_metrics = answer.metrics
            if current:
                self.state = EngineState.READY
            return AnswerEnd(live, answer.text, status, answer.metrics, note, None)
        assert error is not None
        text = error.partial or live.text
        status = "partial" if text else "error"
        self.store.update_message(live.message_id, text, status, None, error.message)
        if current and error.kind == "engine_died":
            self._dead(error.message)
        elif current:
            self.state = EngineState.READY
        return AnswerEnd(live, text, status, None, error.message, error)

    def stop(self) -> bool:
        """Ask the engine to end the live answer; False when there is nothing (more) to stop."""
        if self.live is None or self.live.stopping or self.client is None:
            return False
        self.live.stopping = True
        self.live.stop_requested.set()
        self.client.stop()
        return True

    # ---- the engine -----------------------------------------------------------------------------
    def load(self, options: LoadOptions) -> None:
        """Start a fresh engine for `options` (the old one, if any, is shut down first)."""
        self.options = options
        old = self.client
        client = self.client = open_client(
            options,
            env=self.env(),
            on_exit=lambda reason: self.events.engine_exited(client, reason),
            log_path=self.log_path,
        )
        self.report = None
        self.problem = ""
        self.load_stage = "connecting" if options.endpoint else "starting the engine"
        self.state = EngineState.LOADING
        self.run(lambda cancel: self._load(client, old, options, cancel), "load")

    def _load(
        self, client: ChatClient, old: ChatClient | None, options: LoadOptions, cancel: threading.Event
    ) -> None:
        if old is not None:
            old.shutdown()
        try:
            client.start()
            report = client.load(
                options, on_progress=lambda stage: self.events.load_progress(client, stage), cancel=cancel
            )
        except ChatError as exc:
            client.shutdown()
            self.events.load_done(client, None, exc)
            return
        self.events.load_done(client, report, None)

    def progress(self, client: ChatClient, stage: str) -> bool:
        """A load stage was reported; False when it came from an engine no longer in use."""
        if client is not self.client:
            return False
        self.load_stage = stage
        return True

    def loaded(
        self, client: ChatClient, report: LoadReport | None, error: ChatError | None
    ) -> LiveAnswer | None:
        """A load ended; returns the answer it started for the waiting question, if any."""
        if client is not self.client:
            return None
        if report is None:
            assert error is not None
            self.client = None
            self.state = EngineState.FAILED
            kept = " Your message is saved." if self.pending is not None else ""
            self.problem = f"Loading failed: {error.message}{kept} m chooses a model, l retries."
            self.pending = None
            return None
        self.report = report
        self.state = EngineState.READY
        pending, self.pending = self.pending, None
        return None if pending is None else self._start_answer(pending)

    def exited(self, client: ChatClient, reason: str) -> bool:
        """The engine ended unasked; True when that changed the state (a live answer learns it
        from its own failure instead)."""
        if client is self.client and self.state in (EngineState.READY, EngineState.LOADING):
            self._dead(reason)
            return True
        return False

    def _dead(self, reason: str) -> None:
        self.client = None
        self.report = None
        self.state = EngineState.DEAD
        self.problem = reason

    def unload(self) -> bool:
        """End the engine and free its card; False when none was running."""
        client, self.client = self.client, None
        self.report = None
        self.state = EngineState.NONE
        self.problem = ""
        self.pending = None
        if client is None:
            return False
        self.run(lambda cancel: client.shutdown(), "unload")
        return True

    def close(self) -> None:
        """The owner goes away: keep what the live answer had, end the engine."""
        if self.live is not None:
            note = "Interrupted: the panel was closed while answering."
            self.store.update_message(self.live.message_id, self.live.text, "partial", None, note)
        if self.client is not None:
            self.client.shutdown(timeout=CLOSE_WAIT_S)
            self.client = None

    # ---- words for the owner to show ------------------------------------------------------------
    def status_text(self) -> StatusText:
        label = self.report.label if self.report else model_label(self.options)
        state = self.state
        if state is EngineState.LOADING:
            return StatusText(f"Loading {label}… {self.load_stage}", f"{label}\nloading…", "")
        if state in (EngineState.READY, EngineState.GENERATING) and self.report is not None:
            status = self.report.summary()
            if self.live is not None:
                status = ("Stopping… " if self.live.stopping else "Answering… Esc stops · ") + status
            elif self.last_metrics is not None:
                status += " · " + self.last_metrics.summary()
            pid = self.client.pid if self.client else None
            where = f"engine pid {pid}" if pid else self.report.source
            card = f"{label}\n{self.report.device} · {self.report.dtype}\n{where}"
            return StatusText(status, card, "")
        if state in (EngineState.FAILED, EngineState.DEAD):
            ended = "engine died" if state is EngineState.DEAD else "load failed"
            return StatusText(
                "No model loaded · l reloads · m chooses a model", f"{label}\n{ended}", self.problem
            )
        status = f"No model loaded · m chooses one · sending a message loads the {label}"
        return StatusText(status, f"{label}\nnot loaded", "")
