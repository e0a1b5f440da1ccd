"""Pilot tests of the Chat screen: typing, sending, Esc, switching, dialogs, engine death, restart."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Checkbox, Input, Markdown, OptionList, RadioButton, Static

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.chat.options import GAUDI_BNB_REASON, GenerationParams
from gaudi_tui.core.demo import load_corpus, starter_questions
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.chat import ChatScreen
from gaudi_tui.ui.screens.chat_dialogs import LoadDialog, RenameDialog
from gaudi_tui.ui.widgets.chat_message import LiveText, MessageView
from gaudi_tui.ui.widgets.chat_params import ParamsPanel
from gaudi_tui.ui.widgets.confirm import ConfirmScreen
from tests.chat.seed import ANSWER, seed_conversations

GAUDI = Accelerator(
    "hpu", "transformers.is_torch_hpu_available() is True (8 card(s) visible)", 8, "GAUDI2", "bfloat16"
)


async def wait_until(pilot: Pilot, ready: Callable[[], bool], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, "timed out waiting for the Chat screen"
        await pilot.pause(0.05)


async def send(pilot: Pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_send_stop_continue_kill_reload_quit_and_restart(cpu_accelerator: Accelerator) -> None:
    app = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        screen = app.screen
        assert isinstance(screen, ChatScreen)
        assert isinstance(app.focused, OptionList)  # not the input: 1–4 and q still reach the app
        await pilot.press("i")
        assert app.focused is screen.query_one("#chat-input", Input)
        await send(pilot, "What is hl-smi?")
        store = screen.store
        assert store is not None
        conversation = store.conversations()[0]
        assert [m.content for m in store.messages(conversation.id)] == [
            "What is hl-smi?"
        ]  # before any answer
        await wait_until(pilot, lambda: screen.engine_state == "ready" and screen.live is None)
        question, answer = store.messages(conversation.id)
        assert answer.status == "complete" and "hl-smi" in answer.content and answer.model == "demo model"
        assert answer.metrics is not None and answer.metrics.tokens_out > 0
        assert len(screen.query(MessageView)) == 2
        shown = screen.query(MessageView)[-1]  # drawn as Markdown once it ended, then its metrics
        await wait_until(pilot, lambda: "TTFT" in shown.meta)
        assert shown.query_one(Markdown).source == answer.content and not screen.query(LiveText)
        assert "TTFT" in str(screen.query_one("#chat-status", Static).render())
        assert store.conversations()[0].title == "What is hl-smi?"

        # Esc stops a long answer; the partial answer is saved and the model stays loaded.
        store.set_params(conversation.id, GenerationParams(max_new_tokens=200, min_new_tokens=200))
        await send(pilot, "What is HL-225?")
        await wait_until(pilot, lambda: screen.live is not None and bool(screen.live.text))
        assert screen.live is not None and screen.query_one(LiveText).text == screen.live.text  # streaming
        chat_input = screen.query_one("#chat-input", Input)
        assert not chat_input.cursor_blink  # no blink redraws while the answer decodes
        await pilot.press("escape")
        await wait_until(pilot, lambda: screen.live is None)
        assert chat_input.cursor_blink
        stopped = store.messages(conversation.id)[-1]
        assert stopped.status == "partial" and stopped.content
        assert stopped.metrics is not None and stopped.metrics.stopped and stopped.metrics.tokens_out < 200
        assert screen.engine_state == "ready"

        # ...and the conversation continues.
        store.set_params(conversation.id, GenerationParams(max_new_tokens=24))
        await send(pilot, "What is Intel Gaudi?")
        await wait_until(pilot, lambda: screen.live is None and len(store.messages(conversation.id)) == 6)
        assert store.messages(conversation.id)[-1].status == "complete"

        # Esc leaves the input, then the mode keys work again.
        await pilot.press("escape")
        assert isinstance(app.focused, OptionList)
        await pilot.press("1")
        assert app.current_mode == "devices"
        await pilot.press("3")
        assert app.screen is screen

        # The engine dies: the pane says why and l reloads it.
        first_pid = screen.client.pid if screen.client else 0
        os.kill(first_pid, signal.SIGKILL)
        await wait_until(pilot, lambda: screen.engine_state == "dead")
        assert "killed by SIGKILL" in str(screen.query_one("#chat-banner", Static).render())
        await pilot.press("l")
        await wait_until(pilot, lambda: screen.engine_state == "ready")
        second_pid = screen.client.pid if screen.client else 0
        assert second_pid != first_pid
        assert not screen.query_one("#chat-banner").display

        # Quitting in the middle of an answer keeps what arrived and ends the engine.
        store.set_params(conversation.id, GenerationParams(max_new_tokens=200, min_new_tokens=200))
        await pilot.press("i")
        await send(pilot, "What is hl-smi?")
        await wait_until(pilot, lambda: screen.live is not None and bool(screen.live.text))
        await pilot.press("ctrl+q")
    assert gone(second_pid)

    # A new app finds everything that was said, the stopped answer included.
    again = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    async with again.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        screen = again.screen
        views = screen.query(MessageView)
        texts = [view.text for view in views]
        assert texts[0] == "What is hl-smi?" and texts[2] == "What is HL-225?" and len(texts) == 8
        assert "stopped" in views[3].meta
        # the worker may still deliver the stopped answer, or the screen saves it while unmounting
        assert texts[7] and ("stopped" in views[7].meta or "panel was closed" in views[7].note)
        assert screen.client is None  # nothing loads until the user sends


async def test_switch_rename_copy_export_delete_and_bad_parameters(
    cpu_accelerator: Accelerator, gaudi_home: Path
) -> None:
    seed_conversations()
    app = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        screen = app.screen
        assert isinstance(screen, ChatScreen)
        assert screen.query(MessageView)[0].text == "How do I watch the cards?"
        await pilot.press("down")  # the list has focus: moving in it switches conversations
        assert screen.query(MessageView)[0].text == "What is HL-225?"
        assert "Gaudi 2" in screen.query(MessageView)[1].text

        await pilot.press("r")
        assert isinstance(app.screen, RenameDialog)
        await pilot.press("ctrl+u", *"Gaudi 2 cards", "enter")
        assert [o.prompt for o in screen.query_one(OptionList).options][1].plain == "Gaudi 2 cards"

        await pilot.press("y")
        assert app.clipboard == ANSWER
        await pilot.press("e")
        exports = sorted(p.name for p in (gaudi_home / "data" / "exports").iterdir())
        assert exports == [
            f"gaudi-2-cards-{screen.conversation_id}.json",
            f"gaudi-2-cards-{screen.conversation_id}.md",
        ]

        await pilot.press("i", "tab")  # Tab leaves the message box too
        assert not isinstance(app.focused, Input)

        await pilot.press("p")
        panel = screen.query_one(ParamsPanel)
        assert panel.display
        await pilot.click("#param-max_new_tokens")
        await pilot.press("end", "ctrl+u", *"lots")
        assert "max_new_tokens must be a whole number, not 'lots'" in panel.error
        await pilot.click("#chat-input")
        await send(pilot, "Will this send?")
        assert [m.content for m in screen.store.messages(screen.conversation_id)][-1] != "Will this send?"
        assert screen.client is None
        await pilot.click("#param-max_new_tokens")
        await pilot.press("end", "ctrl+u", *"64")
        await pilot.pause()
        assert panel.error == ""
        assert screen.current().params.max_new_tokens == 64

        await pilot.press("escape")  # back to the list, where single-letter keys act
        await pilot.click("#conversations")
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause()
        assert [c.title for c in screen.store.conversations()] == ["How do I watch the cards?"]


async def test_load_dialog_on_gaudi_disables_8bit_and_fp4_with_the_reason() -> None:
    app = GaudiApp(accelerator=GAUDI, hostname="h")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3", "m")
        dialog = app.screen
        assert isinstance(dialog, LoadDialog)
        buttons = {b.name: b for b in dialog.query(RadioButton)}
        assert buttons["int8"].disabled and buttons["fp4"].disabled
        assert not buttons["nf4"].disabled and not buttons["none"].disabled
        assert str(dialog.query_one("#load-quant-reason", Static).render()) == GAUDI_BNB_REASON
        assert "hpu_backend" in str(dialog.query_one("#load-compile", Checkbox).label)
        dialog.query_one("#load-trust", Checkbox).value = True
        await pilot.press(*"/models/other")  # another model: trust goes back off
        assert dialog.query_one("#load-trust", Checkbox).value is False
        await pilot.press("escape")
        assert isinstance(app.screen, ChatScreen)
        assert app.screen.client is None


def test_conversation_snapshot(snap_compare, cpu_accelerator: Accelerator) -> None:
    seed_conversations()
    app = GaudiApp(accelerator=cpu_accelerator, hostname="gaudi-host")
    assert snap_compare(app, terminal_size=(100, 30), press=["3", "down", "p"])


async def test_empty_state_offers_demo_questions_and_sends_the_one_picked(
    cpu_accelerator: Accelerator,
) -> None:
    app = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        screen = app.screen
        assert isinstance(screen, ChatScreen) and screen.store is not None
        hints = " ".join(str(hint.render()) for hint in screen.query(".chat-hint"))
        assert "knows only the questions it was trained on" in hints and "does not fit" in hints
        starters = screen.query_one("#chat-starters", OptionList)
        assert [o.prompt.plain for o in starters.options] == starter_questions()
        corpus = {pair["question"]: pair["answer"] for pair in load_corpus()}
        assert set(starter_questions()) <= set(corpus) and len(starter_questions()) == 5

        await pilot.press("s", "down", "enter")  # the second question
        question = starter_questions()[1]
        conversation = screen.current()
        assert [m.content for m in screen.store.messages(conversation.id)] == [question]
        assert not screen.query("#chat-starters") and app.focused is screen.query_one("#chat-input")
        await wait_until(pilot, lambda: screen.engine_state == "ready" and screen.live is None)
        answer = screen.store.messages(conversation.id)[-1]
        assert answer.status == "complete" and answer.content.startswith(corpus[question][:40])
