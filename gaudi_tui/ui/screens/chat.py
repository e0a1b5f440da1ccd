"""Chat: a Transformers model in an engine child process, streamed, stoppable, measured, remembered."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, OptionList, Static
from textual.worker import get_current_worker

from gaudi_tui.core.chat.backend import ChatClient
from gaudi_tui.core.chat.compare import first_options
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.options import LoadOptions
from gaudi_tui.core.chat.session import ChatSession, EngineState, Job, LiveAnswer
from gaudi_tui.core.chat.store import ChatStore
from gaudi_tui.core.demo import starter_questions
from gaudi_tui.ui.gil_switching import prompt_switching
from gaudi_tui.ui.screens.chat_compare import CompareDialog, CompareScreen
from gaudi_tui.ui.screens.chat_conversations import ConversationsScreen
from gaudi_tui.ui.screens.chat_dialogs import LoadDialog
from gaudi_tui.ui.screens.chat_events import (
    AnswerChunk,
    AnswerDone,
    AnswerWarning,
    EngineExited,
    LoadDone,
    LoadProgress,
    PostedEvents,
)
from gaudi_tui.ui.widgets.chat_log import ChatLog, empty_state
from gaudi_tui.ui.widgets.chat_message import STATUS_WORDS
from gaudi_tui.ui.widgets.chat_params import ParamsPanel


class ChatScreen(ConversationsScreen):
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
        Binding("s", "suggest", "Pick a demo question", id="chat.suggest", show=False),
        Binding("l", "reload", "Reload model", id="chat.reload", show=False),
        Binding("u", "unload", "Unload model", id="chat.unload", show=False),
        Binding("r", "rename", "Rename conversation", id="chat.rename", show=False),
        Binding("d", "delete", "Delete conversation", id="chat.delete", show=False),
        Binding("e", "export", "Export (Markdown + JSON)", id="chat.export", show=False),
        Binding("y", "copy_answer", "Copy last answer", id="chat.copy", show=False),
        Binding("c", "compare", "Side by side", id="chat.compare", show=False),
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
    ChatScreen .chat-empty { height: auto; }
    ChatScreen .chat-hint { color: $text-muted; padding: 1 0 0 0; }
    ChatScreen #chat-starters { height: auto; border: none; margin: 1 0 0 2; }
    ChatScreen #chat-input { margin: 0 1; }
    ChatScreen #chat-status { height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    ChatScreen #chat-params { display: none; }
    ChatScreen.-params #chat-params { display: block; }
    ChatScreen.-narrow.-params #chat-side { display: none; }
    """

    def __init__(self, store_path: Path | None = None) -> None:
        super().__init__()
        self.store_path = store_path
        self.store: ChatStore | None = None
        self.session: ChatSession | None = None
        self.conversation_id: int | None = None
        self.starters: list[str] = []
        self.wanted_model: str | None = None
        """A model to use instead of the configured one (set by Training's "try in Chat")."""

    @property
    def engine_state(self) -> EngineState:
        return self._session().state

    @property
    def live(self) -> LiveAnswer | None:
        return self.session.live if self.session else None

    @property
    def client(self) -> ChatClient | None:
        return self.session.client if self.session else None

    def answering_in(self, conversation_id: int) -> bool:
        return self.live is not None and self.live.conversation_id == conversation_id

    def _session(self) -> ChatSession:
        assert self.session is not None
        return self.session

    # ---- layout ------------------------------------------------------------------------------
    def compose_body(self) -> ComposeResult:
        with Horizontal(id="chat-body"):
            with Vertical(id="chat-side"):
                yield Static("Conversations", classes="chat-section", markup=False)
                yield OptionList(id="conversations")
                yield Static("", id="chat-model", markup=False)
            with Vertical(id="chat-center"):
                yield Static("", id="chat-banner", markup=False)
                yield ChatLog(id="chat-log")
                yield Input(id="chat-input", placeholder="Ask something — Enter sends, Esc stops or leaves")
                yield Static("", id="chat-status", markup=False)
            yield ParamsPanel(id="chat-params")

    async def on_mount(self) -> None:
        self.store = ChatStore(self.store_path)
        self.session = ChatSession(
            self.store, PostedEvents(self.post_message), self._run_job, self._engine_env
        )
        self.session.options = self.app.settings.chat.load_options()
        if self.wanted_model:
            self.session.options = replace(self.session.options, model=self.wanted_model)
        if not self.store.conversations():
            self.store.create()
        self.refresh_conversations(select=self.store.conversations()[0].id)
        await self.show_conversation(self.store.conversations()[0].id)
        self.show_state()

    def on_unmount(self) -> None:
        if self.session is not None:
            self.session.close()
        if self.store is not None:
            self.store.close()

    def _engine_env(self) -> dict[str, str]:
        """The Checklist's environment fixes, as they are when an engine starts."""
        return dict(self.app.env_fixes)

    def _run_job(self, job: Job, name: str) -> None:
        """The session's blocking work runs in a Textual worker thread; a cancelled worker
        (the screen going away) cancels the load or stops the answer. An answer starts once the
        question is drawn: that layout would otherwise take the CPU a CPU-only engine on the same
        host needs for its first tokens (bench/chat.py). While it streams, the GIL changes hands
        sooner (`ui/gil_switching.py`: the engine client's reader thread stamps each token promptly
        while this thread draws a frame; bench/chat.py)."""

        def work() -> None:
            with prompt_switching() if name == "generate" else nullcontext():
                job(get_current_worker().cancelled_event)

        def start() -> None:
            self.run_worker(
                work,
                thread=True,
                exclusive=name != "unload",
                exit_on_error=False,
                group=f"chat-{name}",
                description=f"chat {name}",
            )

        if name == "generate":
            self.call_after_refresh(start)
        else:
            start()

    # ---- conversations -----------------------------------------------------------------------
    async def show_conversation(self, conversation_id: int) -> None:
        """Draw a conversation from the store (and the live answer, when it belongs here)."""
        self.conversation_id = conversation_id
        conversation = self.current()
        live = self.live
        here = live if live is not None and live.conversation_id == conversation_id else None
        messages = self._store().messages(conversation_id)
        shown = [m for m in messages if live is None or m.id != live.message_id]
        await self.query_one(ChatLog).show(shown, self.empty_state(), here)
        self.query_one(ParamsPanel).fill(conversation.params, conversation.system_prompt)

    def empty_state(self) -> Vertical:
        """What an empty conversation shows: the keys, and with the demo model, questions it knows."""
        if not self._session().uses_demo_model:
            return empty_state(None)
        self.starters = starter_questions()
        return empty_state(self.starters)

    def action_suggest(self) -> None:
        for starters in self.query("#chat-starters"):
            starters.focus()

    @on(OptionList.OptionSelected, "#chat-starters")
    async def _starter_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        assert event.option.id is not None
        if await self.ask(self.starters[int(event.option.id)]):
            self.action_focus_input()

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
    def action_escape(self) -> None:
        if self._session().stop():
            self.show_state()
        elif isinstance(self.focused, Input):
            self.query_one("#conversations", OptionList).focus()

    # ---- sending -----------------------------------------------------------------------------
    @on(Input.Submitted, "#chat-input")
    async def send(self, event: Input.Submitted) -> None:
        event.stop()
        if await self.ask(event.value.strip()):
            event.input.value = ""

    async def ask(self, text: str) -> bool:
        """Send `text` in the shown conversation; False when it could not be sent (and why is shown)."""
        if not text:
            return False
        panel = self.query_one(ParamsPanel)
        if panel.error:
            self.notify(f"Fix the parameters first. {panel.error}", severity="error")
            return False
        conversation = self.current()
        try:
            stored, live = self._session().ask(conversation.id, text)
        except ChatError as exc:
            self.notify(exc.message, severity="warning")
            return False
        await self.query_one(ChatLog).add_question(stored)
        self.refresh_conversations(select=conversation.id)
        if live is not None:
            await self.draw_live(live)
        self.show_state()
        return True

    async def draw_live(self, live: LiveAnswer) -> None:
        """Mount the live answer's view when its conversation is the one shown."""
        if live.conversation_id == self.conversation_id:
            await self.query_one(ChatLog).draw_live(live)

    def on_answer_chunk(self, message: AnswerChunk) -> None:
        if self._session().add_text(message.text) is not None:
            self.query_one(ChatLog).append(message.text)

    def on_answer_warning(self, message: AnswerWarning) -> None:
        self._session().add_warning(message.text)
        self.notify(message.text, severity="warning", timeout=8)

    async def on_answer_done(self, message: AnswerDone) -> None:
        end = self._session().finish(message.answer, message.error)
        if end is None:
            return
        if end.error is not None and end.error.kind != "engine_died":
            self.notify(end.error.message, title="The answer failed", severity="error", timeout=10)
        self.show_state()
        meta = end.metrics.summary() if end.metrics is not None else STATUS_WORDS[end.status]
        await self.query_one(ChatLog).finish(end.text, meta, end.note or "")

    # ---- the engine --------------------------------------------------------------------------
    def on_load_progress(self, message: LoadProgress) -> None:
        if self._session().progress(message.client, message.stage):
            self.show_state()

    async def on_load_done(self, message: LoadDone) -> None:
        live = self._session().loaded(message.client, message.report, message.error)
        self.show_state()
        if live is not None:
            await self.draw_live(live)

    def on_engine_exited(self, message: EngineExited) -> None:
        if self._session().exited(message.client, message.reason):
            self.show_state()

    def action_model(self) -> None:
        async def chosen(options: LoadOptions | None) -> None:
            if options is not None:
                self._session().load(options)
                self.show_state()
                if not self._store().messages(self.current().id):  # the empty state names the model
                    await self.show_conversation(self.current().id)

        self.app.push_screen(LoadDialog(self._session().options, self.app.accelerator), chosen)

    def action_reload(self) -> None:
        if self.live is not None:
            self.notify("Stop the answer first (Esc).", severity="warning")
            return
        self._session().load(self._session().options)
        self.show_state()

    def action_unload(self) -> None:
        if self.live is not None:
            self.notify("Stop the answer first (Esc).", severity="warning")
            return
        if self._session().unload():
            self.notify("Model unloaded: the engine process ends and frees the card.")
        self.show_state()

    def action_compare(self, first: str | None = None) -> None:
        """Ask for two models (the chosen one and its base by default), then show them side by side."""

        def chosen(pair: tuple[str, str] | None) -> None:
            if pair is not None:
                options = first_options(pair[0], self._session().options)
                params = self.current().params
                self.app.push_screen(
                    CompareScreen(options, pair[1], params, self.store_path, self._engine_env())
                )

        current = self._session().options
        self.app.push_screen(CompareDialog(first or current.endpoint or current.model), chosen)

    def try_trained(self, model: str) -> None:
        """Training's "try in Chat": chat with `model` from now on, and show it beside its base."""
        self.wanted_model = model
        if self.session is None:  # the screen is still mounting
            self.call_after_refresh(self.try_trained, model)
            return
        self.session.options = replace(self.session.options, model=model, endpoint="", api_key_env="")
        self.show_state()
        options = self.session.options
        self.app.push_screen(
            CompareScreen(options, "base", self.current().params, self.store_path, self._engine_env())
        )

    # ---- state display -----------------------------------------------------------------------
    def show_state(self) -> None:
        if self.session is None or not self.query("#chat-status"):
            return  # not composed yet
        text = self.session.status_text()
        self.query_one("#chat-status", Static).update(text.status)
        self.query_one("#chat-model", Static).update(text.card)
        banner = self.query_one("#chat-banner", Static)
        banner.update(text.banner)
        banner.display = bool(text.banner)
        # a blinking cursor redraws the input twice a second, CPU the answer being decoded needs
        self.query_one("#chat-input", Input).cursor_blink = self.live is None
