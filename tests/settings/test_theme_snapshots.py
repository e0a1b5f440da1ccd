"""SVG snapshots of the replayed Devices screen in a light theme, a dark theme, and with NO_COLOR:
the warning/error/success colours follow the theme (busy cards, a supported-set check)."""

from __future__ import annotations

import pytest

from gaudi_tui.core import settings
from gaudi_tui.core.devices.monitor import MonitorConfig
from gaudi_tui.core.devices.sources.host import HostStats
from gaudi_tui.core.devices.sources.replay import ReplayFeed, resolve, snapshots
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.devices import DevicesScreen
from gaudi_tui.ui.widgets.device_table import DeviceTable
from tests.conftest import CPU

HOST = HostStats(
    cpu_pct=7.0, cpu_count=16, memory_used_mib=40960, memory_total_mib=515072, load=(1.2, 0.9, 0.7)
)


def replay_app(theme: str) -> GaudiApp:
    """The gaudi2 replay's busy recording only, with a fixed host row, so the picture is stable."""
    replay = resolve("gaudi2")
    busy = snapshots(replay)[2:]
    config = MonitorConfig(interval=3600)

    def screen() -> DevicesScreen:
        return DevicesScreen(
            config, lambda on_update, cancel: ReplayFeed(busy, 3600, on_update, cancel, lambda: HOST)
        )

    class App(GaudiApp):
        MODES = {**GaudiApp.MODES, "devices": screen}

    settings.config_path().write_text(f'theme = "{theme}"\n')
    return App(accelerator=CPU, hostname="gaudi-host", settings=settings.load(environ={}), replay=replay)


async def choose_two_busy_cards(pilot) -> None:
    while not pilot.app.screen.query(DeviceTable):  # the map is mounted after the first frame
        await pilot.pause(0.05)
    table = pilot.app.screen.query_one(DeviceTable)
    while table.row_count == 0:
        await pilot.pause(0.05)
    for _ in range(3):
        await pilot.press("down")
    await pilot.press("space", "down", "down", "space")  # cards 3 and 5: busy, not a supported pair
    await pilot.pause(0.1)


@pytest.mark.parametrize("theme", ["textual-light", "textual-dark"])
def test_replayed_devices_in_a_theme(snap_compare, theme: str) -> None:
    assert snap_compare(replay_app(theme), terminal_size=(100, 30), run_before=choose_two_busy_cards)


def test_replayed_devices_with_no_color(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(replay_app("textual-dark"), terminal_size=(100, 30), run_before=choose_two_busy_cards)
