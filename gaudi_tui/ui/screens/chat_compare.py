"""Chat side by side: the same question to two models (base and tuned, or two checkpoints of one run),
both answers streaming next to each other, each with its own metrics.

The engines are `core/chat/compare.Comparison`'s (one engine when the two differ only by an adapter).
Each question is asked on its own (no history), so the two answers differ only by the model. The
question and both answers are saved in a conversation of their own, each answer with who answered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from gaudi_tui.core.chat.batcher import ChunkBatcher
from gaudi_tui.core.chat.client import Answer
from gaudi_tui.core.chat.compare import SIDES, Comparison
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.metrics import LoadReport
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from gaudi_tui.core.chat.store import ChatStore, Status
from gaudi_tui.ui.gil_switching import prompt_switching
from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.screens.dialog import Dialog
from gaudi_tui.ui.widgets.chat_log import FollowingScroll
from gaudi_tui.ui.widgets.chat_message import MessageView


class CompareDialog(Dialog[tuple[str, str] | None]):
    """Choose the two models: the first as in the load dialog, the second also "base"."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="compare-dialog.cancel")]

    def __init__(self, first: str, second: str = "base") -> None:
        super().__init__()
        self.first, self.second = first, second

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(
                "Side by side: the same question to two models", classes="dialog-title", markup=False
            )
            yield Static(
                "Model: demo, a folder, an adapter or checkpoint folder, a job id, a server's URL",
                markup=False,
            )
            yield Input(self.first, id="compare-first", compact=True)
            yield Static(
                "Beside it: base (its base model), another model or checkpoint, a server's URL", markup=False
            )
            yield Input(self.second, id="compare-second", compact=True)
            yield Static("Enter compares · Esc cancels", classes="dialog-hint", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        first = self.query_one("#compare-first", Input).value.strip()
        second = self.query_one("#compare-second", Input).value.strip()
        if event.input.id == "compare-first" and not second:
            self.query_one("#compare-second", Input).focus()
            return
        self.dismiss((first or "demo", second or "base"))

    def action_cancel(self) -> None:
        self.dismiss(None)


@dataclass
class CompareLoaded(Message):
    reports: list[LoadReport] | None
    error: ChatError | None


@dataclass
class CompareChunk(Message):
    side: int
    text: str


@dataclass
class CompareDone(Message):
    answers: list[Answer] | None
    error: ChatError | None


class CompareScreen(PanelScreen):
    TITLE = "Chat · side by side"
    HELP = (
        "The same question to two models, both answers streaming side by side with their own "
        "metrics. When the two differ only by an adapter, one engine serves both (the base is "
        "loaded once; the base's answer has the adapter switched off). Each question is asked on "
        "its own, without history. Esc stops the answers, or goes back to Chat."
    )
    AUTO_FOCUS = "#compare-input"
    BINDINGS = [Binding("escape", "escape", "Stop / back", id="compare.escape")]
    DEFAULT_CSS = """
    CompareScreen #compare-banner { height: auto; padding: 0 1; background: $error 20%; display: none; }
    CompareScreen #compare-body { height: 1fr; }
    CompareScreen .compare-side { width: 1fr; border: round $primary; }
    CompareScreen .compare-who { height: auto; padding: 0 1; text-style: bold; color: $primary; }
    CompareScreen .compare-log { height: 1fr; padding: 0 1; }
    CompareScreen #compare-input { margin: 0 1; }
    CompareScreen #compare-status { height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    """

    def __init__(
        self,
        first: LoadOptions,
        second: str,
        params: GenerationParams | None = None,
        store_path: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.first = first
        self.second = second
        self.params = params or GenerationParams()
        self.store_path = store_path
        self.env = env or {}
        self.store: ChatStore | None = None
        self.comparison: Comparison | None = None
        self.conversation_id: int | None = None
        self.message_ids: list[int] = []
        self.views: list[MessageView] = []
        self.answering = False
        self.cancel = threading.Event()
        self.engines = ""
        """How the two are served, for the status line."""

    def compose_body(self) -> ComposeResult:
        yield Static("", id="compare-banner", markup=False)
        with Horizontal(id="compare-body"):
            for side, name in enumerate((self.first.model, self.second)):
                with Vertical(classes="compare-side"):
                    yield Static(name, id=f"compare-who-{side}", classes="compare-who", markup=False)
                    yield FollowingScroll(id=f"compare-log-{side}", classes="compare-log")
        yield Input(id="compare-input", placeholder="Ask both — Enter sends, Esc stops or goes back")
        yield Static("", id="compare-status", markup=False)

    def on_mount(self) -> None:
        self.store = ChatStore(self.store_path)
        self._status(f"Loading {self.first.model} and {self.second}…")
        self.load()

    def on_unmount(self) -> None:
        self.cancel.set()
        if self.comparison is not None:
            self.comparison.close()
        if self.store is not None:
            self.store.close()

    # ---- loading -------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="compare-load", description="compare load")
    def load(self) -> None:
        try:
            self.comparison = Comparison(self.first, self.second, env=self.env)
            reports = self.comparison.load(cancel=get_current_worker().cancelled_event)
        except ChatError as exc:
            self.post_message(CompareLoaded(None, exc))
            return
        self.post_message(CompareLoaded(reports, None))

    def on_compare_loaded(self, message: CompareLoaded) -> None:
        if message.error is not None or self.comparison is None:
            assert message.error is not None
            self._banner(f"Loading failed: {message.error.message} Esc goes back to Chat.")
            self._status("No models loaded")
            return
        for side, who in enumerate(self.comparison.provenances):
            self.query_one(f"#compare-who-{side}", Static).update(who.summary())
        shared = self.comparison.plan.shared
        self.engines = "one engine, the base loaded once" if shared else "two engines"
        self._status(f"Ready ({self.engines}) · {' · '.join(r.summary() for r in message.reports or [])}")

    # ---- asking --------------------------------------------------------------------------------
    @on(Input.Submitted, "#compare-input")
    async def send(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            return
        if self.comparison is None or not self.comparison.reports:
            self.notify("The models are not loaded yet (or failed to load).", severity="warning")
            return
        if self.answering:
            self.notify("Both models are still answering: wait, or Esc stops them.", severity="warning")
            return
        event.input.value = ""
        await self.ask(text)

    async def ask(self, text: str) -> None:
        assert self.store is not None and self.comparison is not None
        who = self.comparison.provenances
        if self.conversation_id is None:
            title = f"Compare: {who[0].label} · {who[1].label}"
            self.conversation_id = self.store.create(title=title, params=self.params).id
        self.store.add_message(self.conversation_id, "user", text)
        self.message_ids = [
            self.store.add_message(
                self.conversation_id, "assistant", "", "partial", model=p.label, provenance=p
            ).id
            for p in who
        ]
        self.views = []
        for side in range(SIDES):
            log = self.query_one(f"#compare-log-{side}", FollowingScroll)
            view = MessageView("assistant", who[side].label, live=True)
            await log.mount_all([MessageView("user", "You", text), view])
            self.views.append(view)
            log.scroll_end(animate=False)
        self.answering = True
        self.cancel = threading.Event()
        self._status("Answering… Esc stops both")
        self.answer([{"role": "user", "content": text}], self.cancel)

    @work(thread=True, exit_on_error=False, group="compare-answer", description="compare answer")
    def answer(self, messages: list[dict[str, str]], cancel: threading.Event) -> None:
        assert self.comparison is not None and self.store is not None

        def emit(side: int) -> Callable[[str], None]:
            return lambda text: self._post(CompareChunk(side, text))

        batchers = [ChunkBatcher(self.store, mid, emit(side)) for side, mid in enumerate(self.message_ids)]
        try:
            with prompt_switching():  # both answers' tokens stamped promptly, as in Chat
                answers = self.comparison.ask(
                    messages, self.params, on_text=lambda side, t: batchers[side].add(t), cancel=cancel
                )
        except ChatError as exc:
            for batcher in batchers:
                batcher.flush()
            self.post_message(CompareDone(None, exc))
            return
        for batcher in batchers:
            batcher.flush()
        self.post_message(CompareDone(answers, None))

    async def on_compare_chunk(self, message: CompareChunk) -> None:
        if message.side < len(self.views):
            self.views[message.side].append(message.text)

    async def on_compare_done(self, message: CompareDone) -> None:
        assert self.store is not None
        self.answering = False
        if message.answers is None:
            assert message.error is not None
            for mid, view in zip(self.message_ids, self.views, strict=True):
                self.store.update_message(mid, "", "error", None, message.error.message)
                await view.finish(view.text, "failed")
            self._banner(f"The answers failed: {message.error.message}")
            self._status("Esc goes back to Chat")
            return
        for mid, view, answer in zip(self.message_ids, self.views, message.answers, strict=True):
            status: Status = "partial" if answer.stopped else "complete"
            self.store.update_message(mid, answer.text, status, answer.metrics)
            await view.finish(answer.text, answer.metrics.summary())
        self._status(f"Ready ({self.engines}) · ask another question, or Esc goes back to Chat")

    def action_escape(self) -> None:
        if self.answering and self.comparison is not None:
            self.cancel.set()
            self._status("Stopping…")
            return
        self.dismiss()

    def _post(self, message: Message) -> None:
        self.post_message(message)

    # ---- words ---------------------------------------------------------------------------------
    def _status(self, text: str) -> None:
        self.query_one("#compare-status", Static).update(text)

    def _banner(self, text: str) -> None:
        banner = self.query_one("#compare-banner", Static)
        banner.update(text)
        banner.display = bool(text)
