"""The Chat screen while an answer streams: the log follows it and lets a reader who scrolled up stay
put; the GIL changes hands sooner meanwhile; the whole answer is drawn at the end."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from textual.widgets import Input, Markdown

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.chat.options import GenerationParams
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.chat import ANSWER_SWITCH_INTERVAL_S, ChatScreen, prompt_switching
from gaudi_tui.ui.widgets.chat_log import ChatLog
from gaudi_tui.ui.widgets.chat_message import LiveText
from tests.chat.test_screen import send, wait_until

USUAL_S = 0.005
"""CPython's default switch interval."""


@pytest.fixture
def usual_switching() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(USUAL_S)
    yield
    sys.setswitchinterval(before)


def test_switching_is_prompt_inside_and_as_it_was_after(usual_switching: None) -> None:
    with prompt_switching():
        assert sys.getswitchinterval() == ANSWER_SWITCH_INTERVAL_S
    assert sys.getswitchinterval() == USUAL_S
    with pytest.raises(RuntimeError), prompt_switching():
        raise RuntimeError("the answer failed")
    assert sys.getswitchinterval() == USUAL_S


def test_the_apps_first_second_ending_during_an_answer_is_kept(usual_switching: None) -> None:
    sys.setswitchinterval(ANSWER_SWITCH_INTERVAL_S)  # the app's first second (ui/app.py)
    with prompt_switching():
        sys.setswitchinterval(USUAL_S)  # ...which ends now
    assert sys.getswitchinterval() == USUAL_S


LONG = GenerationParams(max_new_tokens=230, min_new_tokens=230)
"""The longest answer the demo model's 256 positions allow: many more lines than a 16-row terminal shows."""


async def test_the_log_follows_the_answer_until_the_reader_scrolls_up_then_again_at_the_end(
    cpu_accelerator: Accelerator, usual_switching: None
) -> None:
    app = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    async with app.run_test(size=(100, 16)) as pilot:
        await pilot.press("3")
        screen = app.screen
        assert isinstance(screen, ChatScreen) and screen.store is not None
        store = screen.store
        conversation = store.conversations()[0]
        store.set_params(conversation.id, LONG)
        log = screen.query_one(ChatLog)
        await pilot.press("i")
        await send(pilot, "What is HL-225?")

        def at_end() -> bool:
            return log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y

        # Streaming past the bottom, the log follows the answer (some lines past it: one line past
        # it, the top still counts as the end).
        await wait_until(pilot, lambda: screen.live is not None and log.max_scroll_y > 3 and at_end())
        assert screen.live is not None
        assert sys.getswitchinterval() == ANSWER_SWITCH_INTERVAL_S

        # The reader scrolls up (as Home does, without its animation): the answer keeps arriving,
        # the view stays put.
        log.scroll_home(animate=False)
        await wait_until(pilot, lambda: log.scroll_y == 0)
        height = log.virtual_size.height
        await wait_until(pilot, lambda: screen.live is None or log.virtual_size.height > height)
        assert log.scroll_y == 0 and log.max_scroll_y > 0

        # Back at the end, it follows again, through the answer's end drawn as Markdown.
        log.scroll_end(animate=False)
        await wait_until(pilot, lambda: screen.live is None)
        answer = store.messages(conversation.id)[-1]
        assert answer.status == "complete" and answer.metrics is not None and answer.metrics.tokens_out == 230
        await wait_until(pilot, lambda: not screen.query(LiveText) and at_end())
        assert sys.getswitchinterval() > ANSWER_SWITCH_INTERVAL_S  # as it was
        assert screen.query_one(Markdown).source == answer.content  # the whole text, once

        # Sending from the input follows the new answer even after a scroll up.
        log.scroll_home(animate=False)
        await wait_until(pilot, lambda: log.scroll_y == 0)
        store.set_params(conversation.id, GenerationParams(max_new_tokens=24))
        screen.query_one("#chat-input", Input).focus()
        await send(pilot, "What is hl-smi?")
        await wait_until(pilot, lambda: screen.live is None and len(store.messages(conversation.id)) == 4)
        await wait_until(pilot, at_end)
