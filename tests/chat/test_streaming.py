"""The Chat screen while an answer streams: the GIL changes hands sooner, and as before once it
ends; the whole answer is drawn at the end."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Markdown, Static

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.chat.options import GenerationParams
from gaudi_tui.core.chat.session import LiveAnswer
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.gil_switching import PROMPT_S, prompt_switching
from gaudi_tui.ui.screens.chat import ChatScreen
from gaudi_tui.ui.widgets.chat_log import ChatLog
from gaudi_tui.ui.widgets.chat_message import LiveText, MessageView
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
        assert sys.getswitchinterval() == PROMPT_S
    assert sys.getswitchinterval() == USUAL_S
    with pytest.raises(RuntimeError), prompt_switching():
        raise RuntimeError("the answer failed")
    assert sys.getswitchinterval() == USUAL_S


def test_two_overlapping_holders_keep_it_prompt_until_the_last_lets_go(usual_switching: None) -> None:
    """Two answers side by side (or an answer in the app's first second): the one that ends first
    must not put 5 ms back while the other still streams."""
    first, second = prompt_switching(), prompt_switching()
    with first:
        second.__enter__()
    assert sys.getswitchinterval() == PROMPT_S  # the second still streams
    second.__exit__(None, None, None)
    assert sys.getswitchinterval() == USUAL_S


def test_holders_in_two_threads_and_a_release_counted_once(usual_switching: None) -> None:
    started, end = threading.Event(), threading.Event()

    def answer() -> None:
        with prompt_switching():
            started.set()
            end.wait(10)

    other = threading.Thread(target=answer)
    other.start()
    assert started.wait(10)
    hold = prompt_switching()
    hold.release()
    hold.release()  # a timer and an unmount may both release the app's first second
    assert sys.getswitchinterval() == PROMPT_S
    end.set()
    other.join(10)
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
        assert sys.getswitchinterval() == PROMPT_S
        await wait_until(pilot, lambda: screen.live is None)
        answer = store.messages(conversation.id)[-1]
        assert answer.status == "complete" and answer.metrics is not None and answer.metrics.tokens_out == 230
        await wait_until(pilot, lambda: not screen.query(LiveText))
        assert sys.getswitchinterval() == USUAL_S  # as it was
        assert screen.query_one(Markdown).source == answer.content  # the whole text, once


class LogApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ChatLog(id="chat-log")


async def test_a_growing_live_answer_is_laid_out_and_followed_at_every_new_line() -> None:
    """The live answer and its message view skip Textual's second layout when they grow: each new
    line must still be placed at once, the view as tall as its text, the log at its end."""
    app = LogApp()
    async with app.run_test(size=(40, 10)) as pilot:
        log = app.query_one(ChatLog)
        await log.draw_live(LiveAnswer(1, 1, "demo"))
        await pilot.pause()
        live, view = app.query_one(LiveText), app.query_one(MessageView)
        for chunk in range(1, 13):
            log.append(f"line {chunk} " + "word " * 5)  # 36 characters: a new line every chunk or so
            await pilot.pause()
            lines = live.get_content_height(live.size, live.size, live.content_size.width)
            assert live.content_size.height == lines
            assert view.outer_size.height == 1 + lines  # who, then the text
            assert log.virtual_size.height >= view.region.bottom - log.region.y + log.scroll_y
            # following the answer: the layout that grew the log put it at its end
            await wait_until(pilot, lambda: log.scroll_y == log.max_scroll_y, timeout=30)
        assert lines >= 8 and log.max_scroll_y > 0  # it outgrew the log
        bottom = log.content_region.bottom
        assert bottom - 2 <= live.region.bottom <= bottom  # its last line on screen, above the margin


async def test_the_layout_that_grows_the_log_keeps_a_reader_at_its_end_and_one_above_in_place() -> None:
    """Following does not hang on a scroll asked for before the layout (which could stop a line
    short and stay there): whatever grows the log, a reader at its end stays at it; one who scrolled
    up keeps their place."""
    app = LogApp()
    async with app.run_test(size=(40, 10)) as pilot:
        log = app.query_one(ChatLog)
        for line in range(14):  # mounted without a scroll of their own
            await log.mount(Static(f"line {line}"))
            await pilot.pause()
        await wait_until(pilot, lambda: log.max_scroll_y == 4)
        assert log.scroll_y == log.max_scroll_y
        log.scroll_home(animate=False, immediate=True)
        for line in range(3):
            await log.mount(Static(f"more {line}"))
        await wait_until(pilot, lambda: log.max_scroll_y == 7)
        assert log.scroll_y == 0
