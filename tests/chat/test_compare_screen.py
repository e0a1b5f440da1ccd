"""The side-by-side view's dialog and its refusals (no engine starts for a comparison that cannot be)."""

from __future__ import annotations

from textual.widgets import Input

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.chat import ChatScreen
from gaudi_tui.ui.screens.chat_compare import CompareChunk, CompareDialog, CompareScreen
from gaudi_tui.ui.widgets.chat_log import FollowingScroll
from gaudi_tui.ui.widgets.chat_message import MessageView
from tests.chat.test_screen import wait_until


async def test_c_asks_for_two_models_and_a_model_without_a_base_is_refused_clearly(
    cpu_accelerator: Accelerator,
) -> None:
    app = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3", "c")
        dialog = app.screen
        assert isinstance(dialog, CompareDialog)
        assert dialog.query_one("#compare-first", Input).value == "demo"  # the chosen model, beside its base
        assert dialog.query_one("#compare-second", Input).value == "base"
        await pilot.press("enter")
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        banner = compare.query_one("#compare-banner")
        await wait_until(pilot, lambda: bool(banner.display), timeout=30)
        assert "no separate base to compare with" in str(banner.render())
        assert compare.comparison is None  # refused before any engine started
        await pilot.press("escape")
        assert isinstance(app.screen, ChatScreen)  # and Chat goes on


async def test_each_side_follows_its_growing_answer(cpu_accelerator: Accelerator) -> None:
    """A side's log keeps a reader at its end while the answer streamed into it grows past the pane."""
    app = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3", "c", "enter")
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        await wait_until(pilot, lambda: bool(compare.query_one("#compare-banner").display), timeout=30)
        log = compare.query_one("#compare-log-1", FollowingScroll)
        view = MessageView("assistant", "base", live=True)
        await log.mount(view)
        compare.views = [MessageView("assistant", "demo", live=True), view]
        for line in range(40):
            compare.post_message(CompareChunk(1, f"line {line}\n"))
        await wait_until(pilot, lambda: view.text.count("\n") == 40)
        await wait_until(pilot, lambda: log.max_scroll_y > 20 and log.scroll_y == log.max_scroll_y)
