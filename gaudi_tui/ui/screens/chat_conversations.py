"""The Chat screen's conversations: the list, and creating, renaming, deleting, exporting and copying
from them (`ChatScreen` draws them and streams the answers)."""

from __future__ import annotations

from textual import on
from textual.content import Content
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from gaudi_tui.core.chat import export
from gaudi_tui.core.chat.store import ChatStore, Conversation
from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.screens.chat_dialogs import RenameDialog
from gaudi_tui.ui.widgets.confirm import ConfirmScreen


class ConversationsScreen(PanelScreen):
    """The part of the Chat screen that keeps its conversations; `ChatScreen` fills in how one is
    shown and whether an answer is streaming into one."""

    store: ChatStore | None = None
    conversation_id: int | None = None

    async def show_conversation(self, conversation_id: int) -> None:
        raise NotImplementedError

    def answering_in(self, conversation_id: int) -> bool:
        """Whether the live answer belongs to conversation `conversation_id`."""
        raise NotImplementedError

    def action_focus_input(self) -> None:
        self.query_one("#chat-input", Input).focus()

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
        if self.answering_in(conversation.id):
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
