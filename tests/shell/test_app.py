"""Pilot tests of the shell: modes, help, command palette, quit, header."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.help import HelpScreen


def make_app(accel: Accelerator) -> GaudiApp:
    return GaudiApp(accelerator=accel, hostname="gaudi-host")


@pytest.mark.parametrize(
    ("key", "mode", "title"),
    [
        ("1", "devices", "Devices"),
        ("2", "checklist", "Checklist"),
        ("3", "chat", "Chat"),
        ("4", "training", "Training"),
    ],
)
async def test_number_keys_switch_screens(
    cpu_accelerator: Accelerator, key: str, mode: str, title: str
) -> None:
    app = make_app(cpu_accelerator)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4" if key != "4" else "1")
        await pilot.press(key)
        assert app.current_mode == mode
        assert app.screen.TITLE == title
        assert str(app.screen.query_one("#header-screen", Static).render()) == title


async def test_header_shows_host_and_accelerator_reason(cpu_accelerator: Accelerator) -> None:
    app = make_app(cpu_accelerator)
    async with app.run_test(size=(120, 24)):
        assert str(app.screen.query_one("#header-host", Static).render()) == "gaudi-host"
        text = str(app.screen.query_one("#header-accel", Static).render())
        assert text.startswith("cpu: no CUDA device")


async def test_help_lists_every_app_binding(cpu_accelerator: Accelerator) -> None:
    app = make_app(cpu_accelerator)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = str(app.screen.query_one("#help-keys", Static).render())
        for label in ("Devices", "Checklist", "Chat", "Training", "Help", "Quit"):
            assert label in keys
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_command_palette_switches_screen(cpu_accelerator: Accelerator) -> None:
    app = make_app(cpu_accelerator)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"open training")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.current_mode == "training"


@pytest.mark.parametrize("key", ["q", "ctrl+q"])
async def test_quit_exits_zero(cpu_accelerator: Accelerator, key: str) -> None:
    app = make_app(cpu_accelerator)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key)
    assert app.return_value == 0


async def test_probe_runs_when_no_accelerator_is_given(
    monkeypatch: pytest.MonkeyPatch, cpu_accelerator: Accelerator
) -> None:
    from gaudi_tui.core import accelerator as accel_mod

    monkeypatch.setattr(accel_mod, "probe", lambda cancel: cpu_accelerator)
    app = GaudiApp(hostname="h")
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.accelerator is cpu_accelerator


async def test_opening_a_mode_keeps_the_stylesheet_it_has(
    cpu_accelerator: Accelerator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mode's new screen is styled as it mounts; Textual's two whole-stylesheet re-parses (and
    restyles of the whole app) for it are skipped while no theme change waits (issue 28)."""
    from textual.css.stylesheet import Stylesheet

    reparsed: list[int] = []
    reparse = Stylesheet.reparse
    monkeypatch.setattr(Stylesheet, "reparse", lambda self: reparsed.append(1) or reparse(self))
    app = make_app(cpu_accelerator)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        reparsed.clear()
        await pilot.press("4")
        await pilot.pause()
        assert app.current_mode == "training"
        assert reparsed == []


async def test_a_mode_opened_after_a_theme_change_wears_the_new_theme(cpu_accelerator: Accelerator) -> None:
    app = make_app(cpu_accelerator)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        await pilot.pause()
        await pilot.press("4")
        await pilot.pause()
        background = app.get_css_variables()["background"]
        assert app.screen.styles.background.hex.lower() == background.lower()
