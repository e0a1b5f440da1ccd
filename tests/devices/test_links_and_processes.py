"""Links and every process per card on Devices: the column, the banner and the link view at 80×24
(Pilot, the port-down replay and the real details reader against the fake hl-smi, whose card 3
loses scale-out port 8 mid-run), the process merge of hl-smi's table with /proc, and tmux."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Static

from gaudi_tui.core.devices.card_processes import merge_processes
from gaudi_tui.core.devices.details import CardDetails, DetailsPoller
from gaudi_tui.core.devices.holders import find_holders
from gaudi_tui.core.devices.model import DeviceProcess
from gaudi_tui.core.devices.monitor import MonitorUpdate
from gaudi_tui.core.devices.sources.replay import ReplayFeed, resolve, snapshots
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.palette import palette
from gaudi_tui.ui.screens.card_links import CardLinksScreen
from gaudi_tui.ui.screens.devices import DevicesScreen
from gaudi_tui.ui.widgets.device_table import COLUMNS, DeviceTable
from tests import required
from tests.conftest import CPU, PYTHON
from tests.devices.conftest import FakeHlSmi
from tests.devices.test_devices_screen import HOST, replayed, text
from tests.shell.test_tmux import NEEDS_TMUX, Tmux, tmux, wait_exit  # noqa: F401 (tmux is a fixture)

UP, DOWN = "made-gaudi2-x8-nic-link-up.txt", "made-gaudi2-x8-nic-link-card3-port8-down.txt"


def app_with(feed: Callable, details: Callable | None = None) -> GaudiApp:
    def screen() -> DevicesScreen:
        return DevicesScreen(feed=feed, host_reader=lambda: HOST, details=details)

    class App(GaudiApp):
        MODES = {**GaudiApp.MODES, "devices": screen}

    return App(accelerator=CPU, hostname="gaudi-host")


def once(update: MonitorUpdate) -> Callable:
    """A feed that sends `update` once, then waits for its cancel."""

    def feed(on_update: Callable, cancel: threading.Event):  # noqa: ANN202
        class Once:
            def run(self) -> None:
                on_update(update)
                cancel.wait()

        return Once()

    return feed


def links_cell(app: GaudiApp, row: int):  # noqa: ANN201
    table = app.screen.query_one(DeviceTable)
    return table._cells[table._order[row]][[k for k, _, _ in COLUMNS].index("links")]


def links_shown(app: GaudiApp, row: int, text: str) -> bool:
    """The map is built, has that row, and its Link cell reads `text` (a wait's condition: before the
    first update the map has no rows)."""
    tables = app.screen.query(DeviceTable)
    return bool(tables) and tables.first().row_count > row and links_cell(app, row).plain == text


async def wait_for(pilot, condition: Callable[[], bool], timeout: float = 10.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        await pilot.pause(0.05)


async def test_port_down_replay_names_card_3_and_port_8_at_80x24() -> None:
    frames = snapshots(resolve("gaudi2-port-down"))
    app = app_with(lambda on_update, cancel: ReplayFeed(frames, 0.05, on_update, cancel, hold_last=True))
    async with app.run_test(size=(80, 24)) as pilot:
        banner = app.screen.query_one("#devices-links-banner")
        await wait_for(pilot, lambda: banner.has_class("shown"))
        said = text(app, "#devices-links-banner")
        assert "card 3 (module 7): external port 8 DOWN" in said
        assert "multi-node jobs using this card will fail" in said
        assert "manage_network_ifs.sh --up" in said and "hl-smi -n link -i 0000:b4:00.0" in said
        assert links_cell(app, 3).plain == "23/24" and links_cell(app, 0).plain == "24/24"
        assert links_cell(app, 3).style == palette(app).error and links_cell(app, 0).style == ""
        assert app.screen.query_one(DeviceTable).cell_text(7, "holder").startswith("ray::_RayTrai")
        await pilot.press("down", "down", "down", "l")
        assert isinstance(app.screen, CardLinksScreen)
        ports = text(app, "#links-ports")
        assert "port  8 external DOWN" in ports and "port 22 external UP" in ports
        assert "port  0 internal UP" in ports and ports.count(" UP") == 23
        assert "Card 3 · module 7 · 0000:b4:00.0 · NIC ports: 23 of 24 up" in str(
            app.screen.query_one(".dialog-title", Static).render()
        )
        await pilot.press("escape")
        assert isinstance(app.screen, DevicesScreen)
        detail = text(app, "#devices-detail")
        assert "Links: 23 of 24 NIC ports up · scale-out 8 DOWN, 22 up, 23 up" in detail


async def test_the_details_reader_sees_the_port_go_down_and_every_process(fake_hl_smi: FakeHlSmi) -> None:
    """The real reader: one-shot `hl-smi -n link/-n ports -i <bus>` per card and the table, against the
    fake hl-smi replaying the made-from-documentation links, whose card 3 loses port 8 after one round."""
    fake_hl_smi.set(link=f"{UP},{DOWN}", link_after="8")
    update = MonitorUpdate(replayed("gaudi2-hl225-x8-1.20.0-busy-table.txt"), HOST, ())

    def details(devices, on_details, cancel, hlml):  # noqa: ANN001, ANN202
        return DetailsPoller(devices, on_details, cancel, every=0.3, hlml=hlml)

    app = app_with(once(update), details)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: bool(app.screen.query(DeviceTable)))  # mounted after the first frame
        await wait_for(pilot, lambda: links_shown(app, 3, "24/24"), timeout=30)
        assert not app.screen.query_one("#devices-links-banner").has_class("shown")
        await wait_for(pilot, lambda: links_shown(app, 3, "23/24"), timeout=30)
        assert "card 3 (module 7): external port 8 DOWN" in text(app, "#devices-links-banner")
        await pilot.press("end")  # card 7: the process hl-smi lists, which /proc here does not show
        detail = text(app, "#devices-detail")
        assert "Processes on card 7 (1):" in detail
        assert "PID 107684 another user's or container's (/proc hides it) 16770 MiB" in detail
        assert "ray::_RayTrainW (command line hidden)" in detail
    starts = fake_hl_smi.starts()
    assert any(args == "-n ports -i 0000:b4:00.0" for _, args in starts)
    assert sum(args == "-n ports -i 0000:b4:00.0" for _, args in starts) == 1  # port types: asked once


def test_processes_merge_hl_smi_rows_with_proc_holders(tmp_path: Path) -> None:
    """A holder you can see gets hl-smi's memory; hl-smi's row for another user's process gets that
    user, command line and start time from /proc; a PID /proc does not know stays hidden."""
    if os.geteuid() != 0:
        required.require("root", "starting a process as user nobody needs root")
    node = tmp_path / "accel" / "accel2"
    node.parent.mkdir()
    node.touch()
    mine = subprocess.Popen([PYTHON, "-c", f"f = open({str(node)!r})\nimport time\ntime.sleep(60)"])
    other = subprocess.Popen(["sleep", "60"], user="nobody")
    try:
        pattern = rf"^{tmp_path}/accel/accel(\d+)$"
        deadline = time.monotonic() + 10
        while not (holders := find_holders(node_pattern=pattern)):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        table = [
            DeviceProcess(2, mine.pid, "python", 1024),
            DeviceProcess(5, other.pid, "sleep", 30000),
            DeviceProcess(6, 2**22 + 7, "ray::_RayTrainW", 16770),
        ]
        rows = {p.index: p for p in merge_processes(table, holders)}
        assert (rows[2].memory_mib, rows[2].seen_by, rows[2].started) == (
            1024,
            "hl-smi+/proc",
            holders[0].started,
        )
        assert rows[2].command is not None and "time.sleep(60)" in rows[2].command
        assert (rows[5].user, rows[5].command, rows[5].seen_by) == ("nobody", "sleep 60", "hl-smi")
        assert rows[5].started is not None
        assert (rows[6].user, rows[6].command, rows[6].started) == (None, None, None)
        assert merge_processes(table, (), None)[2] == table[2]  # a replay: /proc is not asked
    finally:
        for child in (mine, other):
            child.kill()
            child.wait()


@pytest.mark.slow
@NEEDS_TMUX
def test_port_down_replay_in_a_real_terminal(tmux: Tmux, tmp_path: Path, gaudi_home: Path) -> None:  # noqa: F811
    exit_file = tmp_path / "exit-code"
    command = (
        f"GAUDI_TUI_HOME={shlex.quote(str(gaudi_home))} {shlex.quote(PYTHON)} -m gaudi_tui --replay "
        f"gaudi2-port-down; echo $? > {shlex.quote(str(exit_file))}; sleep 60"
    )
    tmux.run("new-session", "-d", "-s", "panel", "-x", "80", "-y", "24", command)
    tmux.wait_for("external port 8 DOWN", timeout=30)  # the detail pane's links part
    screen = tmux.wait_for("23/24")  # the map's links column: its own Static, maybe a frame apart
    assert "external port 8 DOWN" in screen
    assert "multi-node jobs using this card" in screen and "links made from docs" in screen
    assert all(len(line.rstrip()) <= 80 for line in screen.splitlines())
    tmux.run("send-keys", "-t", "panel", "Down", "Down", "Down", "l")
    screen = tmux.wait_for("port  8 external DOWN")
    assert "23 of 24 up" in screen
    tmux.run("send-keys", "-t", "panel", "Escape")
    tmux.wait_gone("port  8 external DOWN")
    tmux.run("send-keys", "-t", "panel", "q")
    assert wait_exit(exit_file) == 0


def test_hlml_links_from_the_port_masks(fake_modules: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """HLML exposes the links (habana-pyhlml 1.24: hlmlDeviceGetMacAddrInfo's port and external masks,
    hlmlDeviceNicGetLink per port): the reader uses them when the feed reads HLML, no hl-smi needed."""
    import pyhlml

    from gaudi_tui.core.devices.details import read_links_hlml

    monkeypatch.setenv("FAKE_PYHLML_LINK", DOWN)
    pyhlml.hlmlInit()
    try:
        found, errors = read_links_hlml(pyhlml)
    finally:
        pyhlml.hlmlShutdown()
    assert errors == () and [c.index for c in found] == list(range(8))
    assert found[3].bus_id == "0000:b4:00.0" and found[3].external_down == (8,)
    assert [p.number for p in found[0].ports if p.type == "external"] == [8, 22, 23]
    assert all(c.up == 24 for c in found if c.index != 3)
    monkeypatch.setenv("FAKE_PYHLML_LINK", "")  # a card without NIC support: said, not made up
    pyhlml.hlmlInit()
    try:
        found, errors = read_links_hlml(pyhlml)
    finally:
        pyhlml.hlmlShutdown()
    assert found == () and "port 0 (HLML Error with code 3)" in errors[0]  # unknown, never "down"


def test_devices_input_of_saved_link_outputs_names_the_port(capsys: pytest.CaptureFixture[str]) -> None:
    from gaudi_tui.cli import main
    from tests.conftest import SAMPLES

    names = ["gaudi2-hl225-x8-1.20.0-busy-table.txt", DOWN, "made-gaudi2-x8-nic-ports.txt"]
    assert main(["devices", *(a for n in names for a in ("--input", str(SAMPLES / n)))]) == 0
    out = capsys.readouterr().out
    assert "card 3: 23 of 24 NIC ports UP; not up: 8" in out
    assert "error: card 3: external port 8 DOWN: multi-node jobs using this card will fail" in out
    row3 = next(line for line in out.splitlines() if line.startswith("3 "))
    assert "23/24" in row3


def test_devices_replay_of_the_port_down_host_prints_where_it_ends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gaudi_tui.cli import main

    assert main(["devices", "--replay", "gaudi2-port-down", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"] == "replay" and DOWN in data["recordings"]
    down = [(c["index"], p["port"]) for c in data["links"] for p in c["ports"] if not p["up"]]
    assert down == [(3, 8)]


def test_a_port_down_of_unknown_type_is_a_warning_not_a_scale_out_alarm() -> None:
    """Without `-n ports` nobody can say the port is scale-out: no banner, the column only warns."""
    from gaudi_tui.core.devices.links import banner, card_links
    from gaudi_tui.core.devices.model import Device
    from gaudi_tui.ui.palette import Palette
    from gaudi_tui.ui.widgets.device_table import links_style

    device = Device(0, "HL-225", bus_id="0000:b4:00.0")
    (links,), errors = card_links({"0000:b4:00.0": {0: "UP", 8: "DOWN"}}, {}, [device])
    assert (links.index, links.down, links.external_down, links.internal_down) == (0, (8,), (), ())
    assert "did not say which ports are external" in errors[0]
    assert banner([device], [links]) is None
    colours = Palette("yellow", "bold red", "green", "cyan", "blue", "dim")
    assert links_style(links, colours) == "yellow"


async def test_the_details_reader_reads_only_while_devices_is_shown() -> None:
    """A round is 17 hl-smi children on 8 cards: none while another screen covers Devices (here the
    help), and one at once when Devices is back and the last round is older than `every`."""
    update = MonitorUpdate(replayed("gaudi2-hl225-x8-1.20.0-busy-table.txt"), HOST, ())
    rounds: list[float] = []

    class Counted(DetailsPoller):
        def read(self, devices):  # noqa: ANN001, ANN202 - the rounds, not the children, are tested
            rounds.append(time.monotonic())
            return CardDetails()

    def details(devices, on_details, cancel, hlml):  # noqa: ANN001, ANN202
        return Counted(devices, on_details, cancel, every=0.3, hlml=hlml)

    app = app_with(once(update), details)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(rounds) >= 2)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: not isinstance(app.screen, DevicesScreen))
        await pilot.pause(0.4)  # a round under way when the help opened may still finish
        hidden_from = len(rounds)
        await pilot.pause(1.2)  # four periods
        assert len(rounds) == hidden_from
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(rounds) > hidden_from, timeout=2.0)
