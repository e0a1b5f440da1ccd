"""Chat: a Transformers model in an engine child process, streamed, stoppable, measured, remembered."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from gaudi_tui.core.chat import export
from gaudi_tui.core.chat.backend import ChatClient
from gaudi_tui.core.chat.compare import first_options
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.options import LoadOptions
from gaudi_tui.core.chat.session import ChatSession, EngineState, Job, LiveAnswer
from gaudi_tui.core.chat.store import ChatStore, Conversation
from gaudi_tui.core.demo import starter_questions
from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.screens.chat_compare import CompareDialog, CompareScreen
from gaudi_tui.ui.screens.chat_dialogs import LoadDialog, RenameDialog
from gaudi_tui.ui.screens.chat_events import (
    AnswerChunk,
    AnswerDone,
    AnswerWarning,
    EngineExited,
    LoadDone,
    LoadProgress,
    PostedEvents,
)
from gaudi_tui.ui.widgets.chat_message import STATUS_WORDS, MessageView
from gaudi_tui.ui.widgets.chat_params import ParamsPanel
from gaudi_tui.ui.widgets.confirm import ConfirmScreen

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
        self.live_view: MessageView | None = None
        """Where the live answer is drawn, while its conversation is shown."""
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
                yield VerticalScroll(id="chat-log", can_focus=True)
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
        host needs for its first tokens (bench/chat.py)."""

        def work() -> None:
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
        self.live_view = None
        self.conversation_id = conversation_id
        conversation = self.current()
        live = self.live
        views = [
            MessageView.from_stored(m)
            for m in self._store().messages(conversation_id)
            if live is None or m.id != live.message_id
        ]
        log = self.query_one("#chat-log", VerticalScroll)
        await log.remove_children()
        await log.mount_all(views or [self.empty_state()])
        if live is not None:
            await self.draw_live(live)
        self.query_one(ParamsPanel).fill(conversation.params, conversation.system_prompt)
        log.scroll_end(animate=False)

    def empty_state(self) -> Vertical:
        """What an empty conversation shows: the keys, and with the demo model, questions it knows."""
        hint = Static(EMPTY_HINT, classes="chat-hint", markup=False)
        if not self._session().uses_demo_model:
            return Vertical(hint, classes="chat-empty")
        self.starters = starter_questions()
        options = [Option(Content(q), id=str(i)) for i, q in enumerate(self.starters)]
        demo = Static(DEMO_HINT, classes="chat-hint", markup=False)
        return Vertical(hint, demo, OptionList(*options, id="chat-starters"), classes="chat-empty")

    def action_suggest(self) -> None:
        for starters in self.query("#chat-starters"):
            starters.focus()

    @on(OptionList.OptionSelected, "#chat-starters")
    async def _starter_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        assert event.option.id is not None
        if await self.ask(self.starters[int(event.option.id)]):
            self.action_focus_input()

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
        try:
            written = export.export(conversation, self._store().messages(conversation.id))
        except OSError as exc:  # a full disk, a read-only folder: say so, keep the panel
            self.notify(f"Cannot export: {exc}", title="Export", severity="error")
            return
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
        await self.query(".chat-empty").remove()
        log = self.query_one("#chat-log", VerticalScroll)
        await log.mount(MessageView.from_stored(stored))
        log.scroll_end(animate=False)
        self.refresh_conversations(select=conversation.id)
        if live is not None:
            await self.draw_live(live)
        self.show_state()
        return True

    async def draw_live(self, live: LiveAnswer) -> None:
        """Mount the live answer's view when its conversation is the one shown."""
        if live.conversation_id != self.conversation_id:
            return
        self.live_view = MessageView("assistant", live.label, live.text, live=True)
        log = self.query_one("#chat-log", VerticalScroll)
        await log.mount(self.live_view)
        log.scroll_end(animate=False)

    def on_answer_chunk(self, message: AnswerChunk) -> None:
        if self._session().add_text(message.text) is None or self.live_view is None:
            return
        log = self.query_one("#chat-log", VerticalScroll)
        following = log.scroll_y >= log.max_scroll_y - 1  # a reader who scrolled up stays put
        if self.live_view.append(message.text) and following:
            log.scroll_end(animate=False)

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
        view, self.live_view = self.live_view, None
        if view is not None:
            log = self.query_one("#chat-log", VerticalScroll)
            following = log.scroll_y >= log.max_scroll_y - 1
            meta = end.metrics.summary() if end.metrics is not None else STATUS_WORDS[end.status]
            await view.finish(end.text, meta, end.note or "")
            if following:
                log.scroll_end(animate=False)

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
