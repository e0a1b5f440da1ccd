"""The Chat screen while an answer streams: the GIL changes hands sooner, and as before once it
ends; the whole answer is drawn at the end."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from textual.widgets import Markdown

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.chat.options import GenerationParams
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.chat import ANSWER_SWITCH_INTERVAL_S, ChatScreen, prompt_switching
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
"""The longest answer the demo model's 256 positions allow."""


async def test_switching_is_prompt_while_an_answer_streams_and_the_whole_answer_is_drawn(
    cpu_accelerator: Accelerator, usual_switching: None
) -> None:
    app = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        screen = app.screen
        assert isinstance(screen, ChatScreen) and screen.store is not None
        store = screen.store
        conversation = store.conversations()[0]
        store.set_params(conversation.id, LONG)
        await pilot.press("i")
        await send(pilot, "What is HL-225?")
        await wait_until(pilot, lambda: screen.live is not None and bool(screen.live.text))
        assert sys.getswitchinterval() == ANSWER_SWITCH_INTERVAL_S
        await wait_until(pilot, lambda: screen.live is None)
        answer = store.messages(conversation.id)[-1]
        assert answer.status == "complete" and answer.metrics is not None and answer.metrics.tokens_out == 230
        await wait_until(pilot, lambda: not screen.query(LiveText))
        assert sys.getswitchinterval() == USUAL_S  # as it was
        assert screen.query_one(Markdown).source == answer.content  # the whole text, once
