"""What a Devices refresh may skip, and what it may not: an unchanged answer makes no new cells and
redraws no row; a changed value is drawn (its row only); the process merge, the NUMA nodes and the
palette are worked out again only when what they come from changed; the hl-smi reader wakes when a
refresh is due, not every 50 ms."""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import pytest
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Static

from gaudi_tui.core.devices import card_processes
from gaudi_tui.core.devices.card_processes import ProcessMerge
from gaudi_tui.core.devices.model import Device, DeviceProcess
from gaudi_tui.core.devices.monitor import MonitorUpdate
from gaudi_tui.core.devices.parsers import parse_csv
from gaudi_tui.core.devices.query import with_kernel_facts
from gaudi_tui.core.devices.reading import Reading
from gaudi_tui.core.devices.sources.hlsmi import IDLE_S, QUIET_S, _TickReader
from gaudi_tui.ui import palette as palette_module
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.palette import palette
from gaudi_tui.ui.screens.devices import DevicesScreen
from gaudi_tui.ui.screens.devices_feeds import DevicesUpdated, HostUpdated
from gaudi_tui.ui.widgets import device_table
from gaudi_tui.ui.widgets.device_table import DeviceTable
from gaudi_tui.ui.widgets.sparkline_text import LEVELS, spark
from tests.devices.test_devices_screen import HOST, cycle, make_app

T = TypeVar("T")


def _counting(calls: list[object], real: Callable[..., T]) -> Callable[..., T]:
    """`real`, noting each call's first argument in `calls`."""

    def call(*args: object) -> T:
        calls.append(args[0] if args else None)
        return real(*args)

    return call


def _refreshes(monkeypatch: pytest.MonkeyPatch, table: DeviceTable) -> list[tuple[int, ...]]:
    """Each `table.refresh` call from now on that marks lines dirty (Textual's own whole-widget
    refreshes, of styles, say, are left out), as those lines."""
    calls: list[tuple[int, ...]] = []
    real = table.refresh

    def refresh(*regions: Region, **options: bool) -> DeviceTable:
        if regions:
            calls.append(tuple(region.y for region in regions))
        return real(*regions, **options)

    monkeypatch.setattr(table, "refresh", refresh)
    return calls


def _screen(app: GaudiApp) -> DevicesScreen:
    assert isinstance(app.screen, DevicesScreen)
    return app.screen


async def _built(pilot: Pilot[int], app: GaudiApp) -> DeviceTable:
    deadline = 100
    while not app.screen.query(DeviceTable) or app.screen.query_one(DeviceTable).row_count != 8:
        deadline -= 1
        assert deadline > 0, "the map was not built"
        await pilot.pause(0.05)
    return app.screen.query_one(DeviceTable)


async def _post(pilot: Pilot[int], app: GaudiApp, update: MonitorUpdate) -> None:
    screen = _screen(app)
    seen = screen.latest
    screen.post_message(DevicesUpdated(update))
    deadline = 100
    while screen.latest is seen:
        deadline -= 1
        assert deadline > 0, "the update was not handled"
        await pilot.pause(0.02)
    await pilot.pause()


async def test_an_unchanged_answer_makes_no_cells_and_redraws_no_row(monkeypatch: pytest.MonkeyPatch) -> None:
    updates = cycle(ticks=1)
    app = make_app(updates)
    async with app.run_test(size=(120, 36)) as pilot:
        table = await _built(pilot, app)
        made: list[object] = []
        monkeypatch.setattr(device_table, "row_cells", _counting(made, device_table.row_cells))
        redrawn = _refreshes(monkeypatch, table)
        again = MonitorUpdate(replace(updates[0].snapshot), HOST, ())  # equal, not the same object
        await _post(pilot, app, again)
        assert made == [] and redrawn == []


async def test_a_changed_value_is_drawn_in_its_row_only(monkeypatch: pytest.MonkeyPatch) -> None:
    updates = cycle(ticks=1)
    app = make_app(updates)
    async with app.run_test(size=(120, 36)) as pilot:
        table = await _built(pilot, app)
        redrawn = _refreshes(monkeypatch, table)
        snapshot = updates[0].snapshot
        devices = list(snapshot.devices)
        at = next(i for i, d in enumerate(devices) if d.index == 5)
        devices[at] = replace(devices[at], temperature_c=88.0)
        changed = MonitorUpdate(replace(snapshot, devices=tuple(devices)), HOST, ())
        await _post(pilot, app, changed)
        row = [table.cell_text(r, "idx") for r in range(8)].index("5")
        assert table.cell_text(row, "temp") == "88°C"
        assert redrawn == [(row + 1,)]  # line 0 is the header


async def test_new_values_in_every_row_are_marked_dirty_in_one_refresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    updates = cycle(ticks=1)
    app = make_app(updates)
    async with app.run_test(size=(120, 36)) as pilot:
        table = await _built(pilot, app)
        redrawn = _refreshes(monkeypatch, table)
        snapshot = updates[0].snapshot
        devices = tuple(replace(d, temperature_c=(d.temperature_c or 0) + 3) for d in snapshot.devices)
        await _post(pilot, app, MonitorUpdate(replace(snapshot, devices=devices), HOST, ()))
        assert redrawn == [tuple(range(1, 9))]  # one call, the eight rows' lines (line 0 is the header)


def _own_process() -> tuple[DeviceProcess, ...]:
    return (DeviceProcess(0, os.getpid(), "python", 1024, None),)


def test_the_process_merge_asks_proc_again_only_when_its_inputs_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[object] = []
    monkeypatch.setattr(card_processes, "_command", _counting(asked, card_processes._command))
    merge = ProcessMerge()
    first = merge(_own_process(), (), "/proc")
    assert asked == [os.getpid()] and first[0].command  # this process's own command line, from /proc
    assert merge(_own_process(), (), "/proc") is first  # an equal table: nothing asked
    assert asked == [os.getpid()]
    grown = (replace(_own_process()[0], memory_mib=2048),)
    assert merge(grown, (), "/proc")[0].memory_mib == 2048
    assert asked == [os.getpid()] * 2


def test_the_numa_nodes_are_read_from_sysfs_once_per_feed(tmp_path: Path) -> None:
    node = tmp_path / "bus" / "pci" / "devices" / "0000:b3:00.0" / "numa_node"
    node.parent.mkdir(parents=True)
    node.write_text("1\n")
    reading = Reading(
        kind="csv", devices=(Device(index=0, name="HL-225", bus_id="0000:b3:00.0", module_id=2),)
    )
    cache: dict[str | None, int | None] = {}
    assert with_kernel_facts(reading, str(tmp_path), cache).devices[0].numa_node == 1
    node.write_text("0\n")
    assert with_kernel_facts(reading, str(tmp_path), cache).devices[0].numa_node == 1  # kept
    assert with_kernel_facts(reading, str(tmp_path), {}).devices[0].numa_node == 0  # a new feed reads
    assert with_kernel_facts(reading, str(tmp_path)).devices[0].numa_node == 0  # one-shot callers read


async def test_the_palette_is_worked_out_again_only_for_a_new_theme() -> None:
    app = make_app(cycle(ticks=1))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        first = palette(app)
        assert palette(app) is first
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
        await pilot.pause()
        second = palette(app)
        assert second is not first and second == palette_module._palette(app.theme_variables)


def test_the_hl_smi_reader_sleeps_until_a_refresh_is_due() -> None:
    reader = _TickReader(("index", "name"))
    assert reader.wait_s(100.0) == IDLE_S  # nothing pending: it wakes on output
    reader.feed(b"0, HL-225\n", 100.0)
    assert abs(reader.wait_s(100.0) - QUIET_S) < 1e-9  # the refresh is due when the pipe is quiet
    assert abs(reader.wait_s(100.1) - (QUIET_S - 0.1)) < 1e-9
    assert [len(r.devices) for r in reader.ready(100.0 + QUIET_S)] == [1]
    reader.feed(b"  ", 101.0)  # a blank tail: nothing to give, and no reason to wake at once again
    assert reader.ready(101.0 + QUIET_S) == []
    assert reader.wait_s(101.2) == IDLE_S


def _spark_over_the_whole_window(
    values: list[float | None], width: int, window: int, top: float | None
) -> str:
    """The sparkline as it was drawn before: the window padded with blanks, every slot sliced."""
    blank: list[float | None] = [None] * (window - len(values[-window:]))
    recent = blank + values[-window:]
    known = [x for x in recent if x is not None]
    scale = top if top else (max(known) if known else 0)
    out = []
    for slot in range(width):
        seen = [x for x in recent[slot * window // width : (slot + 1) * window // width] if x is not None]
        level = 0 if scale <= 0 or not seen else int(round(max(seen) / scale * 7))
        out.append(LEVELS[max(0, min(7, level))] if seen else " ")
    return "".join(out)


def test_the_sparkline_skips_the_empty_window_and_draws_the_same() -> None:
    """Fewer samples than the window (the first 5 minutes): the blank part is not sliced, the line is
    the same; also with gaps, no top, a window shorter than the width."""
    chance = random.Random(28)
    for _ in range(3000):
        values = [
            None if chance.random() < 0.2 else chance.random() * 100 for _ in range(chance.randint(0, 400))
        ]
        width, window = chance.randint(0, 60), chance.randint(1, 320)
        top = chance.choice([None, 0, 100.0, 50.0])
        assert spark(values, width, window, top) == _spark_over_the_whole_window(values, width, window, top)


def _rich_cell(cell: Text, before: str, after: str, console: Console) -> list[Segment]:
    """How the map drew a cell before: Rich's render of the margins and the cell in one Text."""
    text = Text(no_wrap=True, end="")
    text.append(before)
    text.append_text(cell)
    text.append(after)
    return list(text.render(console))


def test_a_cell_of_one_style_is_made_as_rich_renders_it() -> None:
    """The map's cells without Rich's render: the same segments (text and style) for plain, styled,
    empty, wide-character and spanned cells."""
    console = Console(color_system="truecolor", force_terminal=True)
    chance = random.Random(28)
    styles: list[str | Style] = ["", "bold", "#50fa7b", "bold red", Style(color="red"), Style(), "on #202020"]
    words = ["", "7", "45% ▁▂▃▄▅", "96/96G ██", "HL-225", "—", "卡片", "0000:b3:00.0"]
    for _ in range(2000):
        cell = Text(chance.choice(words), style=chance.choice(styles), justify=chance.choice(["right", None]))
        if chance.random() < 0.2 and cell.plain:
            cell.stylize("bold", 0, 1)
        before, after = " " * chance.randint(1, 4), " " * chance.randint(1, 4)
        made = device_table.cell_segments(cell, before, after, console)
        assert made == _rich_cell(cell, before, after, console), (cell, cell.style, cell.spans)


async def test_a_refresh_of_new_values_asks_rich_to_render_no_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(cycle(ticks=1))
    async with app.run_test(size=(120, 36)) as pilot:
        table = await _built(pilot, app)
        rendered: list[object] = []
        monkeypatch.setattr(Text, "render", _counting(rendered, Text.render))
        index = table.current_index
        assert index is not None
        cells = tuple(
            Text(f"{cell.plain}9", style=cell.style, justify=cell.justify) for cell in table._cells[index]
        )
        table._line(cells)  # every cell new: none in the cache
        assert rendered == []


def test_the_benchs_hl_smi_moves_live_values_and_keeps_each_cards_identity(fake_hl_smi: object) -> None:
    """bench/devices.py's input (`FAKE_HLSMI_VARY`): one host whose utilization, power and temperature
    move at each refresh, as a real host's do, while bus IDs, modules and HBM reserved stay."""
    fields = "index,bus_id,module_id,memory.used,utilization.aip,power.draw,temperature.aip"
    env = dict(os.environ, FAKE_HLSMI_VARY="1", FAKE_HLSMI_PERIOD="0.01")
    child = subprocess.Popen(
        ["hl-smi", "-Q", fields, "-f", "csv,noheader,nounits", "-l", "1"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    lines = [child.stdout.readline() for _ in range(8 * 4)]
    child.kill()
    child.wait()
    rows = [[cell.strip() for cell in line.split(",")] for line in lines]
    refreshes = [rows[at : at + 8] for at in range(0, len(rows), 8)]
    assert len({tuple(tuple(row[:4]) for row in refresh) for refresh in refreshes}) == 1  # identity, HBM
    assert len({tuple(tuple(row[4:]) for row in refresh) for refresh in refreshes}) == 4  # live values
    busy = [row for refresh in refreshes[1:] for row in refresh if int(row[3]) > 2048]
    assert busy and all(40 <= int(row[4]) <= 100 for row in busy)


async def test_a_refresh_of_live_values_repaints_the_detail_pane_s_live_part_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The card's title, links and processes stay drawn while its utilization, power and temperature
    move (the detail pane is three Statics; only the changed one is updated)."""
    updates = cycle(ticks=1)
    app = make_app(updates)
    async with app.run_test(size=(120, 36)) as pilot:
        table = await _built(pilot, app)
        updated: list[str] = []
        for part in ("head", "live", "rest"):
            static = app.screen.query_one(f"#devices-detail-{part}", Static)

            def update(
                *args: object, _real: Callable[..., None] = static.update, _part: str = part, **kw: bool
            ) -> None:
                updated.append(_part)
                _real(*args, **kw)

            monkeypatch.setattr(static, "update", update)
        snapshot = updates[0].snapshot
        index = table.current_index
        devices = tuple(
            replace(d, power_draw_w=(d.power_draw_w or 0) + 7, temperature_c=(d.temperature_c or 0) + 1)
            if d.index == index
            else d
            for d in snapshot.devices
        )
        await _post(pilot, app, MonitorUpdate(replace(snapshot, devices=devices), HOST, ()))
        assert updated == ["live"]
        assert "Power" in str(app.screen.query_one("#devices-detail-live", Static).render())


async def test_the_feeds_messages_stay_with_the_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refresh is handled by the Devices screen and not passed on to the app (which has no handler,
    and would look for one in each of its classes at every refresh)."""
    updates = cycle(ticks=1)
    app = make_app(updates)
    async with app.run_test(size=(120, 36)) as pilot:
        await _built(pilot, app)
        reached: list[object] = []
        monkeypatch.setattr(app, "post_message", _counting(reached, app.post_message))
        await _post(pilot, app, MonitorUpdate(replace(updates[0].snapshot), HOST, ()))
        _screen(app).post_message(HostUpdated(HOST))
        await pilot.pause()
        assert not [m for m in reached if isinstance(m, (DevicesUpdated, HostUpdated))]


def test_a_live_refresh_converts_only_the_cells_that_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The poller's rows repeat most cells (bus ID, name, HBM): each cell text is read once, and a
    changed cell is read and its new value given."""
    read: list[object] = []
    for name, (attr, convert) in list(parse_csv._CONVERT.items()):
        monkeypatch.setitem(parse_csv._CONVERT, name, (attr, _counting(read, convert)))
    monkeypatch.setattr(parse_csv, "_VALUES", {})
    line = "3, 2, 0000:b3:00.0, HL-225, 01P0-T3, 1.20.0, 87, 96000, 98304, 412, 600, 45, 0"
    first = parse_csv.parse_row(parse_csv.QUERY_FIELDS, line, 0).device
    assert len(read) == len(parse_csv.QUERY_FIELDS)
    assert parse_csv.parse_row(parse_csv.QUERY_FIELDS, line, 0).device == first
    assert len(read) == len(parse_csv.QUERY_FIELDS)  # the same row: nothing read again
    moved = parse_csv.parse_row(parse_csv.QUERY_FIELDS, line.replace("412, 600, 45", "398, 600, 46"), 0)
    assert read[len(parse_csv.QUERY_FIELDS) :] == ["398", "46"]
    assert moved.device == replace(first, power_draw_w=398.0, temperature_c=46.0)  # type: ignore[type-var]


def test_a_card_whose_kernel_facts_are_known_is_passed_on_as_it_is() -> None:
    device = Device(index=0, name="HL-225", bus_id="0000:b3:00.0", module_id=2, numa_node=1)
    assert with_kernel_facts(Reading(kind="csv", devices=(device,)), "/nonexistent").devices[0] is device


async def test_the_cursor_row_s_style_is_asked_once_and_again_for_a_new_theme(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = make_app(cycle(ticks=1))
    async with app.run_test(size=(120, 36)) as pilot:
        table = await _built(pilot, app)
        table.render_line(table.cursor_row + 1)  # the first draw of the cursor's row
        asked: list[object] = []
        monkeypatch.setattr(
            table, "get_component_rich_style", _counting(asked, table.get_component_rich_style)
        )
        table.render_line(table.cursor_row + 1)
        assert "device-table--cursor" not in asked  # kept from the first draw
        cursor = DeviceTable.get_component_rich_style(table, "device-table--cursor")
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
        while DeviceTable.get_component_rich_style(table, "device-table--cursor") == cursor:
            await pilot.pause()
        drawn = table.render_line(table.cursor_row + 1)
        new = DeviceTable.get_component_rich_style(table, "device-table--cursor")
        assert asked.count("device-table--cursor") == 1
        assert {s.style.bgcolor for s in drawn if s.text.strip() and s.style} == {new.bgcolor}
