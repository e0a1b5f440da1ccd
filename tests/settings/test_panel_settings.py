"""The panel applies the settings (Pilot): theme, keymap and help, a broken file, the palette's
theme saved back, the refresh interval, the chat defaults, and the replay at 80×24."""

from __future__ import annotations

from textual.widgets import Static

from gaudi_tui.core import settings
from gaudi_tui.core.devices.sources.replay import Replay, resolve
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.bindings import own_bindings
from gaudi_tui.ui.screens.chat import ChatScreen
from gaudi_tui.ui.screens.devices import DevicesScreen
from gaudi_tui.ui.screens.help import HelpScreen, binding_rows
from gaudi_tui.ui.widgets.device_table import DeviceTable
from tests.conftest import CPU


def panel(text: str | None = None, replay: Replay | None = None) -> GaudiApp:
    if text is not None:
        settings.config_path().write_text(text, encoding="utf-8")
    return GaudiApp(accelerator=CPU, hostname="gaudi-host", settings=settings.load(environ={}), replay=replay)


def messages(app: GaudiApp) -> list[str]:
    return [n.message for n in app._notifications]


def test_every_binding_has_an_id_so_every_key_can_be_remapped() -> None:
    found = list(own_bindings())
    assert len(found) > 40
    assert [(owner, b.key) for owner, b in found if not b.id] == []
    ids = [b.id for _, b in found]
    assert len(ids) == len(set(ids))


async def test_theme_and_keys_from_the_file_apply_and_help_shows_the_keys_in_force() -> None:
    app = panel('theme = "textual-light"\n[keys]\n"app.help" = "f1"\n"devices.choose" = "enter"\n')
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.theme == "textual-light"
        await pilot.press("question_mark")  # no longer the help key
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        rows = {label: (key, bid) for key, label, bid in binding_rows(app.screen.for_screen)}
        assert rows["Help"] == ("f1", "app.help") and rows["Choose"] == ("⏎", "devices.choose")
        keys = str(app.screen.query_one("#help-keys", Static).render())
        assert "f1" in keys and "?" not in keys.split("Help")[0].splitlines()[-1]
        assert messages(app) == []


async def test_a_broken_file_starts_on_defaults_names_the_line_and_is_left_alone() -> None:
    text = 'theme = "nord"\n[keys\n"app.help" = "f1"\n'
    app = panel(text)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await pilot.pause()
        assert app.theme == settings.DEFAULT_THEME
        (shown,) = messages(app)
        assert shown.startswith("config.toml line 2: is not valid TOML")
        app.theme = "nord"  # picked in the palette: not saved into a file that does not parse
        await pilot.pause(0.3)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert any("Theme not saved" in m for m in messages(app))
        await pilot.press("1")  # the panel still works
    assert settings.config_path().read_text() == text


async def test_unknown_theme_bad_value_and_unknown_binding_are_told() -> None:
    app = panel(
        'theme = "no-such-theme"\nrefresh_interval = "soon"\n[keys]\n"devices.fly" = "f"\n"devices.sort" = "c"\n'
    )
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await pilot.pause(0.2)
        shown = "\n".join(messages(app))
        assert "line 2: refresh_interval must be a number of seconds" in shown
        assert "theme 'no-such-theme' is not one of:" in shown and app.theme == settings.DEFAULT_THEME
        assert "names no binding: devices.fly" in shown
        assert "gives one key to two bindings, c: devices.copy, devices.sort" in shown


async def test_the_palette_theme_persists_in_the_file_with_comments_kept() -> None:
    app = panel("# mine\n[chat]\nmodel = 'demo'  # the embedded one\n")
    async with app.run_test(size=(100, 30)) as pilot:
        app.theme = "gruvbox"
        await pilot.pause(0.3)
        await app.workers.wait_for_complete()
    text = settings.config_path().read_text()
    assert text.startswith("# mine\n") and "model = 'demo'  # the embedded one" in text
    again = panel()
    async with again.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert again.theme == "gruvbox"


async def test_tests_without_settings_never_write_the_file() -> None:
    app = GaudiApp(accelerator=CPU, hostname="h")
    async with app.run_test(size=(100, 30)) as pilot:
        app.theme = "nord"
        await pilot.pause(0.3)
    assert not settings.config_path().exists()


def test_checklist_on_open_follows_the_setting() -> None:
    assert panel().autorun_checks is True  # the default setting
    assert panel("checklist_on_open = false\n").autorun_checks is False
    assert GaudiApp(accelerator=CPU).autorun_checks is False  # no settings: tests stay host-independent


async def test_refresh_interval_and_chat_defaults_reach_their_screens() -> None:
    app = panel("refresh_interval = 3\n[chat]\nmodel = '/models/mine'\ndtype = 'bfloat16'\n")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, DevicesScreen) and app.screen.config.interval == 3.0
        await pilot.press("3")
        await pilot.pause(0.3)
        chat = app.screen
        assert isinstance(chat, ChatScreen)
        options = chat.session.options
        assert (options.model, options.dtype, options.trust_remote_code) == (
            "/models/mine",
            "bfloat16",
            False,
        )


async def test_replay_at_80x24_is_marked_and_keeps_holder_visible() -> None:
    app = panel(replay=resolve("gaudi2"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()  # the map is mounted after the first frame
        table = app.screen.query_one(DeviceTable)
        for _ in range(40):  # the busy recording is the third frame, one per second
            await pilot.pause(0.25)
            if any("busy" in table.cell_text(r, "holder") for r in range(table.row_count)):
                break
        header = str(app.screen.query_one("#header-replay", Static).render())
        assert header.startswith("REPLAY gaudi2") and "not this host" in header
        assert "via replay" in str(app.screen.query_one("#devices-status", Static).render())
        lines = [table.render_line(y).text for y in range(table.row_count + 1)]
        assert "Holder" in lines[0] and "Bus" not in lines[0]
        assert any("busy, holder not" in line for line in lines[1:])  # Holder is 20 cells at 80
        assert max(len(line.rstrip()) for line in lines) <= 80
        assert app.screen.query_one("#devices-banner", Static).has_class("shown") is False


async def test_started_as_the_cli_starts_it_only_theme_and_keys_come_before_the_first_frame() -> None:
    """`gaudi-tui` reads the theme and keymap early (`core/appearance.py`); the rest of config.toml,
    its problems and the log file come right after the first frame, and the Devices feed uses the
    refresh interval read then."""
    from gaudi_tui.core import appearance, paths

    settings.config_path().write_text(
        'theme = "nord"\nrefresh_interval = 2\nchecklist_on_open = "maybe"\n[keys]\n"app.help" = "f1"\n',
        encoding="utf-8",
    )
    early = appearance.read(environ={})
    assert early == appearance.Appearance("nord", {"app.help": "f1"})
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host", appearance=early)
    assert app.loaded is None and app.theme == "nord"  # nothing else read before the app runs
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await pilot.pause()
        assert app.loaded is not None and app.settings.refresh_interval == 2.0
        assert isinstance(app.screen, DevicesScreen) and app.screen.config.interval == 2.0
        assert [m for m in messages(app) if "checklist_on_open" in m]
        assert (paths.log_dir() / "gaudi-tui.log").exists()
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
