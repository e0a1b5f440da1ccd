"""Chat: a Transformers model in an engine child process, streamed, stoppable, measured, remembered."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Input, OptionList, Static
from textual.widgets.markdown import MarkdownStream
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from gaudi_tui.core.chat import export
from gaudi_tui.core.chat.client import Answer, EngineClient
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.metrics import AnswerMetrics, LoadReport
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from gaudi_tui.core.chat.store import ChatStore, Conversation, prompt_messages
from gaudi_tui.core.demo import DEMO_LABEL, DEMO_MODEL_ID
from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.screens.chat_dialogs import LoadDialog, RenameDialog
from gaudi_tui.ui.widgets.chat_message import STATUS_WORDS, MessageView
from gaudi_tui.ui.widgets.chat_params import ParamsPanel
from gaudi_tui.ui.widgets.confirm import ConfirmScreen

CHUNK_INTERVAL_S = 0.2
"""Tokens reach the pane at most 5 times a second: each Markdown append re-lays out the screen,
CPU that a CPU-only engine on the same host needs (bench/chat.py measures both)."""
SAVE_INTERVAL_S = 1.0
"""A streaming answer is written to the store this often, so a crash loses at most a second."""
EMPTY_HINT = (
    "No messages yet. i (or Enter on a conversation) moves to the message box; your first "
    "message loads the model. m chooses the model and load options, p shows the parameters, "
    "? lists every key."
)


def model_label(options: LoadOptions) -> str:
    """The name shown for a model not loaded yet ("demo model" for the demo)."""
    return DEMO_LABEL if options.model.strip() in ("", DEMO_MODEL_ID) else options.model


# ---- messages from workers ------------------------------------------------------------------
@dataclass
class LoadProgress(Message):
    client: EngineClient
    stage: str


@dataclass
class LoadDone(Message):
    client: EngineClient
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
    client: EngineClient
    reason: str


@dataclass
class LiveAnswer:
    """The answer being streamed: where it is stored and (when its conversation is shown) drawn."""

    conversation_id: int
    message_id: int
    label: str
    text: str = ""
    view: MessageView | None = None
    stream: MarkdownStream | None = None
    stopping: bool = False
    warnings: list[str] = field(default_factory=list)


class ChunkBatcher:
    """Collects streamed text in the worker thread and posts it at most every CHUNK_INTERVAL_S;
    also saves the answer so far to the store every SAVE_INTERVAL_S."""

    def __init__(self, screen: ChatScreen, store: ChatStore, message_id: int) -> None:
        self.screen = screen
        self.store = store
        self.message_id = message_id
        self.pending: list[str] = []
        self.text: list[str] = []
        self.posted_at = 0.0
        self.saved_at = time.monotonic()

    def add(self, text: str) -> None:
        self.pending.append(text)
        self.text.append(text)
        now = time.monotonic()
        if now - self.posted_at >= CHUNK_INTERVAL_S:
            self.flush()
            self.posted_at = now
        if now - self.saved_at >= SAVE_INTERVAL_S:
            self.store.update_message(self.message_id, "".join(self.text), "partial")
            self.saved_at = now

    def flush(self) -> None:
        if self.pending:
            self.screen.post_message(AnswerChunk("".join(self.pending)))
            self.pending.clear()


class ChatScreen(PanelScreen):
    TITLE = "Chat"
    HELP = (
        "Talk to a Transformers model running in an engine process on the accelerator, streamed "
        "and measured. Sending a message loads the model if needed (the demo model by default; m "
        "chooses a local folder or a Hub id and the load options). Esc stops an answer and keeps "
        "it; Esc in the message box goes back to the conversation list, where the single-letter "
        "keys work. Conversations are saved as they happen."
    )
    AUTO_FOCUS = "#conversations"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    BINDINGS = [
        Binding("escape", "escape", "Stop / leave", id="chat.escape"),
        Binding("i", "focus_input", "Write", id="chat.write"),
        Binding("m", "model", "Model…", id="chat.model"),
        Binding("n", "new_conversation", "New", id="chat.new"),
        Binding("p", "toggle_params", "Params", id="chat.params"),
        Binding("l", "reload", "Reload model", id="chat.reload", show=False),
        Binding("u", "unload", "Unload model", id="chat.unload", show=False),
        Binding("r", "rename", "Rename conversation", id="chat.rename", show=False),
        Binding("d", "delete", "Delete conversation", id="chat.delete", show=False),
        Binding("e", "export", "Export (Markdown + JSON)", id="chat.export", show=False),
        Binding("y", "copy_answer", "Copy last answer", id="chat.copy", show=False),
    ]
    DEFAULT_CSS = """
    ChatScreen #chat-body { height: 1fr; }
    ChatScreen #chat-side { width: 26; border-right: solid $primary; }
    ChatScreen .chat-section { text-style: bold; padding: 0 1; }
    ChatScreen #conversations { height: 1fr; border: none; }
    ChatScreen #chat-model { height: auto; padding: 0 1; color: $text-muted; border-top: solid $primary; }
    ChatScreen #chat-center { width: 1fr; }
    ChatScreen #chat-banner { height: auto; padding: 0 1; background: $error 20%; color: $text; display: none; }
    ChatScreen #chat-log { height: 1fr; padding: 0 1; }
    ChatScreen .chat-hint { color: $text-muted; padding: 1 0; }
    ChatScreen #chat-input { margin: 0 1; }
    ChatScreen #chat-status { height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    ChatScreen #chat-params { display: none; }
    ChatScreen.-params #chat-params { display: block; }
    ChatScreen.-narrow.-params #chat-side { display: none; }
    """

    engine_state: reactive[str] = reactive("none")
    """none · loading · ready · generating · failed · dead"""

    def __init__(self, store_path: Path | None = None) -> None:
        super().__init__()
        self.store_path = store_path
        self.store: ChatStore | None = None
        self.client: EngineClient | None = None
        self.options = LoadOptions()
        self.report: LoadReport | None = None
        self.load_stage = ""
        self.problem = ""
        self.conversation_id: int | None = None
        self.live: LiveAnswer | None = None
        self.last_metrics: AnswerMetrics | None = None
        self.pending_conversation: int | None = None

    # ---- layout ------------------------------------------------------------------------------
    def compose_body(self) -> ComposeResult:
        with Horizontal(id="chat-body"):
            with Vertical(id="chat-side"):
                yield Static("Conversations", classes="chat-section", markup=False)
                yield OptionList(id="conversations")
                yield Static("", id="chat-model", markup=False)
            with Vertical(id="chat-center"):
                yield Static("", id="chat-banner", markup=False)
                yield VerticalScroll(id="chat-log", can_focus=True)
                yield Input(id="chat-input", placeholder="Ask something — Enter sends, Esc stops or leaves")
                yield Static("", id="chat-status", markup=False)
            yield ParamsPanel(id="chat-params")

    async def on_mount(self) -> None:
        self.options = self.app.settings.chat.load_options()
        self.store = ChatStore(self.store_path)
        if not self.store.conversations():
            self.store.create()
        self.refresh_conversations(select=self.store.conversations()[0].id)
        await self.show_conversation(self.store.conversations()[0].id)
        self.show_state()

    def on_unmount(self) -> None:
        if self.live is not None and self.store is not None:  # quitting mid-answer keeps what came
            note = "Interrupted: the panel was closed while answering."
            self.store.update_message(self.live.message_id, self.live.text, "partial", None, note)
        if self.client is not None:
            self.client.shutdown(timeout=2.0)
            self.client = None
        if self.store is not None:
            self.store.close()

    # ---- conversations -----------------------------------------------------------------------
    def _store(self) -> ChatStore:
        assert self.store is not None
        return self.store

    def current(self) -> Conversation:
        assert self.conversation_id is not None
        return self._store().conversation(self.conversation_id)

    def refresh_conversations(self, select: int | None = None) -> None:
        conversations = self._store().conversations()
        listing = self.query_one("#conversations", OptionList)
        listing.clear_options()
        listing.add_options([Option(Content(c.title), id=str(c.id)) for c in conversations])
        wanted = select if select is not None else self.conversation_id
        ids = [c.id for c in conversations]
        if wanted in ids:
            listing.highlighted = ids.index(wanted)

    @on(OptionList.OptionHighlighted, "#conversations")
    async def _conversation_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id is not None and int(event.option.id) != self.conversation_id:
            await self.show_conversation(int(event.option.id))

    @on(OptionList.OptionSelected, "#conversations")
    def _conversation_chosen(self) -> None:
        self.action_focus_input()

    async def show_conversation(self, conversation_id: int) -> None:
        """Draw a conversation from the store (and the live answer, when it belongs here)."""
        live = self.live
        if live is not None and live.stream is not None:
            await live.stream.stop()
            live.stream, live.view = None, None
        self.conversation_id = conversation_id
        conversation = self.current()
        views = [
            MessageView.from_stored(m)
            for m in self._store().messages(conversation_id)
            if live is None or m.id != live.message_id
        ]
        log = self.query_one("#chat-log", VerticalScroll)
        await log.remove_children()
        await log.mount_all(views or [Static(EMPTY_HINT, classes="chat-hint", markup=False)])
        if live is not None and live.conversation_id == conversation_id:
            live.view = MessageView("assistant", live.label, live.text)
            await log.mount(live.view)
            live.stream = live.view.stream()
        self.query_one(ParamsPanel).fill(conversation.params, conversation.system_prompt)
        log.scroll_end(animate=False)

    async def action_new_conversation(self) -> None:
        current = self.current()
        if self._store().messages(current.id):
            created = self._store().create(system_prompt=current.system_prompt, params=current.params)
            self.refresh_conversations(select=created.id)
            await self.show_conversation(created.id)
        self.action_focus_input()

    def action_rename(self) -> None:
        conversation = self.current()

        def renamed(title: str | None) -> None:
            if title:
                self._store().rename(conversation.id, title)
                self.refresh_conversations()

        self.app.push_screen(RenameDialog(conversation.title), renamed)

    def action_delete(self) -> None:
        conversation = self.current()
        if self.live is not None and self.live.conversation_id == conversation.id:
            self.notify("This conversation is still answering: Esc stops it first.", severity="warning")
            return
        count = len(self._store().messages(conversation.id))

        async def confirmed(yes: bool | None) -> None:
            if not yes:
                return
            self._store().delete(conversation.id)
            remaining = self._store().conversations() or [self._store().create()]
            self.refresh_conversations(select=remaining[0].id)
            await self.show_conversation(remaining[0].id)
            self.notify(f"Deleted “{conversation.title}”.")

        self.app.push_screen(
            ConfirmScreen(f"Delete “{conversation.title}” and its {count} message(s)?"), confirmed
        )

    def action_export(self) -> None:
        conversation = self.current()
        written = export.export(conversation, self._store().messages(conversation.id))
        self.notify("Exported to " + " and ".join(str(p) for p in written), title="Export")

    def action_copy_answer(self) -> None:
        answers = [
            m for m in self._store().messages(self.current().id) if m.role == "assistant" and m.content
        ]
        if not answers:
            self.notify("There is no answer to copy in this conversation yet.", severity="warning")
            return
        self.app.copy_to_clipboard(answers[-1].content)
        self.notify(f"Copied the last answer ({len(answers[-1].content)} characters) to the clipboard.")

    def action_toggle_params(self) -> None:
        self.toggle_class("-params")
        if self.has_class("-narrow", "-params") and self.focused is self.query_one("#conversations"):
            self.query_one("#chat-log").focus()  # the list is hidden at this width; keys still work

    @on(ParamsPanel.Changed)
    def _params_changed(self, event: ParamsPanel.Changed) -> None:
        conversation = self.current()
        if event.params != conversation.params:
            self._store().set_params(conversation.id, event.params)
        if event.system_prompt != conversation.system_prompt:
            self._store().set_system_prompt(conversation.id, event.system_prompt)

    # ---- focus and keys ----------------------------------------------------------------------
    def action_focus_input(self) -> None:
        self.query_one("#chat-input", Input).focus()

    def action_escape(self) -> None:
        if self.live is not None and not self.live.stopping:
            self.stop_answer()
        elif isinstance(self.focused, Input):
            self.query_one("#conversations", OptionList).focus()

    def stop_answer(self) -> None:
        if self.live is None or self.client is None:
            return
        self.live.stopping = True
        self.client.stop()
        self.show_state()

    # ---- sending -----------------------------------------------------------------------------
    @on(Input.Submitted, "#chat-input")
    async def send(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            return
        if self.live is not None:
            self.notify(
                "An answer is still streaming: wait for it, or press Esc to stop it.", severity="warning"
            )
            return
        panel = self.query_one(ParamsPanel)
        if panel.error:
            self.notify(f"Fix the parameters first. {panel.error}", severity="error")
            return
        conversation = self.current()
        stored = self._store().add_message(conversation.id, "user", text)  # committed before generating
        event.input.value = ""
        await self.query(".chat-hint").remove()
        log = self.query_one("#chat-log", VerticalScroll)
        await log.mount(MessageView.from_stored(stored))
        log.scroll_end(animate=False)
        self.refresh_conversations(select=conversation.id)
        if self.engine_state == "ready":
            await self.start_answer(conversation.id)
        else:
            self.pending_conversation = conversation.id
            if self.engine_state != "loading":
                self.load_model(self.options)

    async def start_answer(self, conversation_id: int) -> None:
        assert self.client is not None and self.report is not None
        conversation = self._store().conversation(conversation_id)
        messages = prompt_messages(conversation, self._store().messages(conversation_id))
        stored = self._store().add_message(
            conversation_id, "assistant", "", status="partial", model=self.report.label
        )
        self.live = LiveAnswer(conversation_id, stored.id, self.report.label)
        if conversation_id == self.conversation_id:
            self.live.view = MessageView("assistant", self.report.label)
            log = self.query_one("#chat-log", VerticalScroll)
            await log.mount(self.live.view)
            self.live.stream = self.live.view.stream()
            log.scroll_end(animate=False)
        self.engine_state = "generating"
        self.generate_answer(self.client, messages, conversation.params, stored.id)

    @work(thread=True, exclusive=True, exit_on_error=False, group="chat-generate", description="chat answer")
    def generate_answer(
        self, client: EngineClient, messages: list[dict[str, str]], params: GenerationParams, message_id: int
    ) -> None:
        batcher = ChunkBatcher(self, self._store(), message_id)
        try:
            answer = client.generate(
                messages,
                params,
                on_text=batcher.add,
                cancel=get_current_worker().cancelled_event,
                on_warning=lambda text: self.post_message(AnswerWarning(text)),
            )
        except ChatError as exc:
            batcher.flush()
            self.post_message(AnswerDone(None, exc))
            return
        batcher.flush()
        self.post_message(AnswerDone(answer, None))

    async def on_answer_chunk(self, message: AnswerChunk) -> None:
        live = self.live
        if live is None:
            return
        live.text += message.text
        if live.stream is not None:
            log = self.query_one("#chat-log", VerticalScroll)
            following = log.scroll_y >= log.max_scroll_y - 1  # a reader who scrolled up stays put
            await live.stream.write(message.text)
            if following:
                log.scroll_end(animate=False)

    def on_answer_warning(self, message: AnswerWarning) -> None:
        if self.live is not None:
            self.live.warnings.append(message.text)
        self.notify(message.text, severity="warning", timeout=8)

    async def on_answer_done(self, message: AnswerDone) -> None:
        live, self.live = self.live, None  # stored below before anything awaits
        if live is None:
            return
        note = " ".join(live.warnings)
        if message.answer is not None:
            answer = message.answer
            status = "partial" if answer.stopped else "complete"
            self._store().update_message(live.message_id, answer.text, status, answer.metrics, note or None)
            self.last_metrics = answer.metrics
            meta = answer.metrics.summary()
            self.engine_state = "ready"
        else:
            error = message.error
            assert error is not None
            text = error.partial or live.text
            status = "partial" if text else "error"
            self._store().update_message(live.message_id, text, status, None, error.message)
            meta, note = STATUS_WORDS[status], error.message
            if error.kind == "engine_died":
                self.engine_dead(error.message)
            else:
                self.engine_state = "ready"
                self.notify(error.message, title="The answer failed", severity="error", timeout=10)
        self.show_state()
        if live.stream is not None:
            await live.stream.stop()
        if live.view is not None:
            live.view.set_meta(meta, note)

    # ---- the engine --------------------------------------------------------------------------
    def load_model(self, options: LoadOptions) -> None:
        """Start a fresh engine for `options` (the old one, if any, is shut down first)."""
        old = self.client
        self.client = EngineClient(env=dict(self.app.env_fixes), on_exit=self._engine_exited)
        self.report = None
        self.problem = ""
        self.load_stage = "starting the engine"
        self.engine_state = "loading"
        self.load_engine(self.client, old, options)

    @work(thread=True, exclusive=True, exit_on_error=False, group="chat-load", description="load chat model")
    def load_engine(self, client: EngineClient, old: EngineClient | None, options: LoadOptions) -> None:
        if old is not None:
            old.shutdown()
        try:
            client.start()
            report = client.load(
                options,
                on_progress=lambda stage: self.post_message(LoadProgress(client, stage)),
                cancel=get_current_worker().cancelled_event,
            )
        except ChatError as exc:
            client.shutdown()
            self.post_message(LoadDone(client, None, exc))
            return
        self.post_message(LoadDone(client, report, None))

    def _engine_exited(self, reason: str) -> None:
        """Called from the client's reader thread when the engine ends unasked."""
        client = self.client
        if client is not None:
            self.post_message(EngineExited(client, reason))

    def on_load_progress(self, message: LoadProgress) -> None:
        if message.client is self.client:
            self.load_stage = message.stage
            self.show_state()

    async def on_load_done(self, message: LoadDone) -> None:
        if message.client is not self.client:
            return
        if message.report is None:
            assert message.error is not None
            self.client = None
            self.engine_state = "failed"
            kept = " Your message is saved." if self.pending_conversation is not None else ""
            self.problem = f"Loading failed: {message.error.message}{kept} m chooses a model, l retries."
            self.pending_conversation = None
            self.show_state()
            return
        self.report = message.report
        self.engine_state = "ready"
        self.show_state()
        pending, self.pending_conversation = self.pending_conversation, None
        if pending is not None:
            await self.start_answer(pending)

    def on_engine_exited(self, message: EngineExited) -> None:
        if message.client is self.client and self.engine_state in ("ready", "loading"):
            self.engine_dead(message.reason)

    def engine_dead(self, reason: str) -> None:
        self.client = None
        self.report = None
        self.engine_state = "dead"
        self.problem = reason
        self.show_state()

    def action_model(self) -> None:
        def chosen(options: LoadOptions | None) -> None:
            if options is not None:
                self.options = options
                self.load_model(options)

        self.app.push_screen(LoadDialog(self.options, self.app.accelerator), chosen)

    def action_reload(self) -> None:
        if self.live is not None:
            self.notify("Stop the answer first (Esc).", severity="warning")
            return
        self.load_model(self.options)

    def action_unload(self) -> None:
        if self.live is not None:
            self.notify("Stop the answer first (Esc).", severity="warning")
            return
        client, self.client = self.client, None
        self.report = None
        self.engine_state = "none"
        self.problem = ""
        if client is not None:
            self.shutdown_engine(client)
            self.notify("Model unloaded: the engine process ends and frees the card.")
        self.show_state()

    @work(thread=True, exit_on_error=False, group="chat-unload", description="unload chat model")
    def shutdown_engine(self, client: EngineClient) -> None:
        client.shutdown()

    # ---- state display -----------------------------------------------------------------------
    def watch_engine_state(self) -> None:
        self.show_state()

    def show_state(self) -> None:
        if not self.query("#chat-status"):
            return  # not composed yet
        label = self.report.label if self.report else model_label(self.options)
        state = self.engine_state
        if state == "loading":
            status = f"Loading {label}… {self.load_stage}"
            card = f"{label}\nloading…"
        elif state in ("ready", "generating") and self.report is not None:
            status = self.report.summary()
            if self.live is not None:
                status = ("Stopping… " if self.live.stopping else "Answering… Esc stops · ") + status
            elif self.last_metrics is not None:
                status += " · " + self.last_metrics.summary()
            card = f"{label}\n{self.report.device} · {self.report.dtype}\nengine pid {self.client.pid if self.client else '?'}"
        elif state in ("failed", "dead"):
            status = "No model loaded · l reloads · m chooses a model"
            card = f"{label}\n{'engine died' if state == 'dead' else 'load failed'}"
        else:
            status = f"No model loaded · m chooses one · sending a message loads the {label}"
            card = f"{label}\nnot loaded"
        self.query_one("#chat-status", Static).update(status)
        self.query_one("#chat-model", Static).update(card)
        banner = self.query_one("#chat-banner", Static)
        banner.update(self.problem)
        banner.display = bool(self.problem) and state in ("failed", "dead")
