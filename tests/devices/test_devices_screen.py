"""The Devices screen with replayed snapshots (Pilot): map, sorting, detail, choosing cards,
stopping a holder, banners; and an SVG snapshot of an 8-card map."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Static

from gaudi_tui.core.devices.holders import CardHolder, find_holders
from gaudi_tui.core.devices.monitor import MonitorConfig, MonitorUpdate
from gaudi_tui.core.devices.parsers.detect import parse_any
from gaudi_tui.core.devices.reading import merge
from gaudi_tui.core.devices.sources.host import HostStats
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.devices import DevicesScreen
from gaudi_tui.ui.widgets.confirm import ConfirmScreen
from gaudi_tui.ui.widgets.device_table import DeviceTable
from tests.conftest import CPU, PYTHON, SAMPLES
from tests.pilot import settle

HOST = HostStats(
    cpu_pct=7.0, cpu_count=16, memory_used_mib=40960, memory_total_mib=515072, load=(1.2, 0.9, 0.7)
)
SAMPLE_CYCLE = (
    "gaudi2-hl225-x8-1.20.0-busy-table.txt",
    "gaudi2-hl225-x8-1.16.0-process-table.txt",
    "gaudi2-hl225-x8-1.12.1-table.txt",
)


def replayed(name: str):
    """A snapshot as the hl-smi source makes it: the sample, module IDs and NUMA from real samples."""
    parts = [name, "gaudi2e-index-module-1.24.0.csv", "gaudi2-topo-cpu-numa.txt"]
    reading = merge(parse_any((SAMPLES / part).read_text()) for part in parts)
    return reading.to_snapshot("hl-smi")


class ReplayFeed:
    """Posts fixed updates (real samples, in turn), then idles until cancelled."""

    def __init__(
        self,
        updates: list[MonitorUpdate],
        on_update: Callable[[MonitorUpdate], None],
        cancel: threading.Event,
    ):
        self.updates, self.on_update, self.cancel = updates, on_update, cancel
        self.scans = 0

    def run(self) -> None:
        for update in self.updates:
            self.on_update(update)
        self.cancel.wait()

    def request_holder_scan(self) -> None:
        self.scans += 1


class NoDetails:
    """A links/process-table reader that never reports (what these tests see must not depend on
    whether this machine's PATH has an hl-smi, nor on how soon it answers)."""

    def __init__(self, cancel: threading.Event) -> None:
        self.cancel = cancel

    def run(self) -> None:
        self.cancel.wait()


def make_app(updates: list[MonitorUpdate], config: MonitorConfig | None = None) -> GaudiApp:
    def screen() -> DevicesScreen:
        return DevicesScreen(
            config=config,
            feed=lambda on_update, cancel: ReplayFeed(updates, on_update, cancel),
            host_reader=lambda: HOST,
            details=lambda devices, on_details, cancel, hlml: NoDetails(cancel),
        )

    class App(GaudiApp):
        MODES = {**GaudiApp.MODES, "devices": screen}

    return App(accelerator=CPU, hostname="gaudi-host")


def cycle(ticks: int = 30, holders: tuple[CardHolder, ...] = ()) -> list[MonitorUpdate]:
    snapshots = [replayed(name) for name in SAMPLE_CYCLE]
    return [MonitorUpdate(snapshots[-1 - i % 3], HOST, holders) for i in range(ticks)]


def text(app: GaudiApp, selector: str) -> str:
    """A Static's text; the detail pane's (`#devices-detail`, three Statics) its parts' shown, joined."""
    if selector == "#devices-detail":
        parts = app.screen.query_one(selector).query(Static)
        return "\n".join(str(part.render()) for part in parts if part.display)
    return str(app.screen.query_one(selector, Static).render())


def cell(app: GaudiApp, row: int, column: str) -> str:
    return app.screen.query_one(DeviceTable).cell_text(row, column)


async def test_map_shows_every_card_with_holder_state_and_versions() -> None:
    app = make_app(cycle())
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.3)
        table = app.screen.query_one(DeviceTable)
        assert table.row_count == 8
        assert cell(app, 3, "hbm").strip().startswith("94/96G")  # last tick: the busy sample
        assert cell(app, 3, "holder") == "busy, holder not visible"
        assert cell(app, 7, "holder") == "ray::_RayTrainW (107684)"
        assert cell(app, 0, "mod") == "2" and cell(app, 0, "card") == "Gaudi 2"
        assert cell(app, 7, "power").strip().startswith("100/600W")
        status = text(app, "#devices-status")
        assert "host: CPU 7% of 16 cores" in status
        assert "8 cards via hl-smi · hl-smi hl-1.20.0-fw-58.1.1.1 · driver 1.19.1-6f47ddd" in status


async def test_sparklines_follow_the_history() -> None:
    app = make_app(cycle(ticks=300))
    async with app.run_test(size=(120, 36)) as pilot:

        def spark() -> str:
            tables = app.screen.query(DeviceTable)  # the map mounts after the first frame
            if not tables or tables.first().row_count < 8:
                return ""
            return cell(app, 3, "hbm").split()[-1]

        # the busy sample recurs in every minute of the window: once the 300 ticks are drawn
        await settle(pilot, lambda: spark() == "█████", 30, f"card 3's HBM sparkline (now {spark()!r})")


async def test_sort_cycles_and_marks_the_column() -> None:
    app = make_app(cycle())
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("s")
        assert cell(app, 0, "idx") == "4"  # module 0 is card 4
        await pilot.press("s", "s")  # utilization, then HBM
        assert [cell(app, r, "idx") for r in range(3)] == ["3", "5", "7"]
        assert "sort: HBM" in text(app, "#devices-status")


async def test_detail_pane_follows_the_cursor_and_explains_a_hidden_holder() -> None:
    app = make_app(cycle())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("down", "down", "down")
        detail = text(app, "#devices-detail")
        assert detail.startswith("Card 3 · module 7 · Gaudi 2 (HL-225) · 0000:b4:00.0 · NUMA 1")
        assert "96565 / 98304 MiB reserved" in detail
        assert "Busy, holder not visible" in detail and "sudo hl-smi" in detail
        await pilot.click(DeviceTable, offset=(10, 8))  # row 0 is the header: line 8 is card 7
        assert text(app, "#devices-detail").startswith("Card 7 · module 1")


async def test_the_cursor_row_is_drawn_in_the_cursor_s_colours_in_either_theme() -> None:
    """Each row's strip carries the table's own background, so the cursor must go over it, not
    under it (drawn under, the cursor row looked like every other row)."""
    app = make_app(cycle())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(
            pilot, lambda: app.screen.query(DeviceTable) and app.screen.query_one(DeviceTable).row_count == 8
        )
        table = app.screen.query_one(DeviceTable)
        await pilot.press("down")
        await settle(pilot, lambda: table.cursor_row == 1)
        before = None
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            await settle(
                pilot,
                lambda was=before: table.get_component_rich_style("device-table--cursor").bgcolor != was,
            )
            cursor = table.get_component_rich_style("device-table--cursor")
            before = cursor.bgcolor
            backgrounds = [
                {seg.style.bgcolor for seg in table.render_line(row) if seg.text.strip() and seg.style}
                for row in (1, 2, 3)
            ]
            assert backgrounds[1] == {cursor.bgcolor}, theme  # line 2: card 1, under the cursor
            assert cursor.bgcolor not in backgrounds[0] | backgrounds[2], theme


async def test_choosing_cards_validates_warns_and_shares_the_selection() -> None:
    app = make_app(cycle())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("space")  # card 0 = module 2
        assert app.selected_cards == (2,)
        choice = text(app, "#devices-choice")
        assert "export HABANA_VISIBLE_MODULES=2 HABANA_VISIBLE_DEVICES=0" in choice
        assert "✓ {2} is a supported set" in choice
        await pilot.press("down", "down", "down", "space")  # card 3 = module 7, busy
        assert app.selected_cards == (2, 7)
        choice = text(app, "#devices-choice")
        assert "✗ {2,7} is not supported" in choice and "nearest valid set is {2,3}" in choice
        assert "⚠ card 3 (module 7) is busy: busy, holder not visible" in choice
        await pilot.press("n")
        assert app.selected_cards == (2, 3)
        assert "HABANA_VISIBLE_MODULES=2,3 HABANA_VISIBLE_DEVICES=0,2" in text(app, "#devices-choice")
        await pilot.press("c")
        assert app.clipboard == "export HABANA_VISIBLE_MODULES=2,3 HABANA_VISIBLE_DEVICES=0,2"
        await pilot.press("x")
        assert app.selected_cards == ()


async def test_selection_survives_switching_screens() -> None:
    app = make_app(cycle())
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("space", "4", "1")
        assert app.selected_cards == (2,)
        assert cell(app, 0, "sel") == "✓"


@pytest.fixture
def stand_in_holder(tmp_path: Path):
    node = tmp_path / "accel" / "accel3"
    node.parent.mkdir()
    node.touch()
    child = subprocess.Popen([PYTHON, "-c", f"f = open({str(node)!r})\nimport time\ntime.sleep(60)"])
    pattern = rf"^{re.escape(str(tmp_path))}/accel/accel(\d+)$"
    deadline = time.monotonic() + 10
    while not (found := find_holders(node_pattern=pattern)):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    yield found[0], MonitorConfig(node_pattern=pattern)
    child.kill()
    child.wait()


async def test_stopping_a_holder_asks_then_sends_term(stand_in_holder) -> None:
    holder, config = stand_in_holder
    app = make_app(cycle(holders=(holder,)), config)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("down", "down", "down")
        assert cell(app, 3, "holder").startswith("python")
        detail = text(app, "#devices-detail")
        assert f"PID {holder.pid} " in detail and "k stops it" in detail
        await pilot.press("k")
        assert isinstance(app.screen, ConfirmScreen)
        assert f"Stop PID {holder.pid}" in text(app, "#confirm-question")
        await pilot.press("y")
        deadline = time.monotonic() + 10
        while not any("has exited" in n.message for n in app._notifications):
            assert time.monotonic() < deadline, [n.message for n in app._notifications]
            await pilot.pause(0.05)
        assert not isinstance(app.screen, ConfirmScreen)  # TERM was enough: no KILL question
        assert app.screen.query_one(DeviceTable)  # the screen is still there and usable


async def test_no_holder_to_stop_explains_why() -> None:
    app = make_app(cycle())
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("down", "down", "down", "k")
        assert not isinstance(app.screen, ConfirmScreen)
        assert any(
            "holder not visible" in n.message or "another user" in n.message for n in app._notifications
        )


async def test_missing_hl_smi_shows_the_banner_at_once(no_hl_smi: None) -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        banner = text(app, "#devices-banner")
        assert "`hl-smi` is not on PATH" in banner and "retries automatically" in banner
        assert app.screen.query_one("#devices-banner").has_class("shown")
        await pilot.press("space")  # no card: a notice, no crash
        assert app.selected_cards == ()


def test_snapshot_of_an_8_card_map(snap_compare) -> None:
    ticks = 120

    async def all_replayed(pilot) -> None:
        screen = pilot.app.screen
        while len(screen.history.series(0, "utilization")) < ticks:
            await pilot.pause(0.05)
        await pilot.pause()

    assert snap_compare(make_app(cycle(ticks=ticks)), terminal_size=(100, 30), run_before=all_replayed)


async def test_the_host_row_stays_live_while_hl_smi_hangs(fake_hl_smi) -> None:  # noqa: ANN001
    """The real device monitor against a hanging hl-smi (the first query waits out its 10 s and its
    fault is shown, then the loop prints nothing): the host row has its own timer, so it still
    refreshes every second."""
    fake_hl_smi.set(fault="hang", after="0")  # every command hangs before printing anything
    reads: list[float] = []

    def counting_host() -> HostStats:  # real timing; the CPU figure counts the reads so each differs
        reads.append(time.monotonic())
        return HostStats(len(reads), 16, 40960, 515072, (1.0, 1.0, 1.0))

    config = MonitorConfig(interval=1.0, use_hlml=False, use_nvml=False)

    def screen() -> DevicesScreen:
        return DevicesScreen(config=config, host_reader=counting_host)

    class App(GaudiApp):
        MODES = {**GaudiApp.MODES, "devices": screen}

    app = App(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(120, 36)) as pilot:
        shown: list[tuple[float, str]] = []
        began = time.monotonic()
        while time.monotonic() - began < 15.0:
            line = text(app, "#devices-status").splitlines()[0]
            if not shown or shown[-1][1] != line:
                shown.append((time.monotonic(), line))
            await pilot.pause(0.1)
        assert "0 cards via none" in text(app, "#devices-status")  # hl-smi never answered
        assert fake_hl_smi.starts(), "the monitor did not try hl-smi"
        changes = [at for at, line in shown if line.startswith("host: CPU")]
        assert changes and changes[0] - began < 2.5, shown[:3]
        gaps = [b - a for a, b in zip(changes, changes[1:], strict=False)]
        gaps.append(time.monotonic() - changes[-1])
        assert max(gaps) <= 2.0, f"the host row froze for {max(gaps):.1f} s"
