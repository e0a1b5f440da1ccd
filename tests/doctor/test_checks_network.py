"""`nic.external_up`: every card's scale-out ports up, from the device map's links (saved outputs
read as the device query reads them; the real read through the fake hl-smi)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gaudi_tui.core.devices.parsers.detect import read_inputs
from gaudi_tui.core.devices.query import read_once
from gaudi_tui.core.doctor.checks import network
from tests.conftest import PYTHON, SAMPLES
from tests.devices.conftest import FAKE_BIN
from tests.doctor.hosts import make_ctx

TABLE = ["gaudi2-hl225-x8-1.20.0-busy-table.txt", "gaudi2e-index-module-1.24.0.csv"]
PORTS = "made-gaudi2-x8-nic-ports.txt"


def snapshot(*names: str):  # noqa: ANN201
    return read_inputs([str(SAMPLES / n) for n in (*TABLE, *names)]).to_snapshot("hl-smi")


def verdict(tmp_path: Path, *names: str):  # noqa: ANN201
    return network.external_ports_up(make_ctx(tmp_path, snapshot=snapshot(*names)))


def test_card_3_port_8_down_fails_naming_them_and_what_to_run(tmp_path: Path) -> None:
    result = verdict(tmp_path, "made-gaudi2-x8-nic-link-card3-port8-down.txt", PORTS)
    assert result.status == "fail"
    assert result.finding == "card 3 (module 7): external port 8 DOWN"
    assert "manage_network_ifs.sh --up" in result.fix and "hl-smi -n link -i 0000:b4:00.0" in result.fix
    assert "Multi-node jobs" in result.explanation


def test_every_external_port_up_is_ok(tmp_path: Path) -> None:
    result = verdict(tmp_path, "made-gaudi2-x8-nic-link-up.txt", PORTS)
    assert (result.status, result.finding) == ("ok", "all 24 external port(s) of 8 card(s) are up")


def test_skipped_with_the_reason_where_hl_smi_cannot_tell(tmp_path: Path) -> None:
    no_links = verdict(tmp_path)
    assert no_links.status == "skip" and no_links.finding.startswith("hl-smi cannot tell the link states")
    no_types = verdict(tmp_path, "made-gaudi2-x8-nic-link-up.txt")  # `-n link` without `-n ports`
    assert no_types.status == "skip" and "which ports are external" in no_types.finding
    # The real Gaudi 2E `-n link` (card 7 only, no -n ports): still cannot tell
    real = read_inputs(
        [str(SAMPLES / n) for n in ("gaudi2e-hl288e-x8-1.24.0-table.txt", "gaudi2e-nic-link-1.24.0.txt")]
    ).to_snapshot("hl-smi")
    assert real.links_of(7) is not None and real.links_of(7).up == 18
    assert network.external_ports_up(make_ctx(tmp_path, snapshot=real)).status == "skip"


def test_the_device_query_reads_the_links_through_hl_smi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the Checklist gets on a host: read_once runs `hl-smi -n link/-n ports -i <bus>` per card."""
    log = tmp_path / "hl-smi.log"
    monkeypatch.setenv("PATH", os.pathsep.join([str(FAKE_BIN), str(Path(PYTHON).parent), os.environ["PATH"]]))
    monkeypatch.setenv("FAKE_HLSMI_SAMPLES_DIR", str(SAMPLES))
    monkeypatch.setenv("FAKE_HLSMI_LINK", "made-gaudi2-x8-nic-link-card3-port8-down.txt")
    monkeypatch.setenv("FAKE_HLSMI_LOG", str(log))
    found = read_once(timeout=20, sys_root=str(tmp_path), dev_root=str(tmp_path), proc_root=str(tmp_path))
    assert [c.external_down for c in found.links] == [(), (), (), (8,), (), (), (), ()]
    result = network.external_ports_up(make_ctx(tmp_path, snapshot=found))
    assert result.status == "fail" and "card 3" in result.finding and "port 8" in result.finding
    assert log.read_text().count(" -n link -i ") == 8


@pytest.mark.slow
def test_gaudi_tui_check_names_card_3_and_port_8(tmp_path: Path) -> None:
    """`gaudi-tui check --json` on the replayed 8-card host (the fake hl-smi: the recorded busy table,
    links made from documentation with card 3's port 8 DOWN)."""
    import json
    import subprocess

    from tests.conftest import ROOT, child_env

    env = child_env(
        PATH=os.pathsep.join([str(FAKE_BIN), str(Path(PYTHON).parent), os.environ["PATH"]]),
        FAKE_HLSMI_SAMPLES_DIR=str(SAMPLES),
        FAKE_HLSMI_LINK="made-gaudi2-x8-nic-link-card3-port8-down.txt",
    )
    done = subprocess.run(
        [PYTHON, "-m", "gaudi_tui", "check", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    item = next(i for i in json.loads(done.stdout) if i["id"] == "nic.external_up")
    assert (item["status"], item["finding"]) == ("fail", "card 3 (module 7): external port 8 DOWN")
    assert "manage_network_ifs.sh --up" in item["fix"] and done.returncode == 1


async def test_checklist_screen_row_names_card_3_and_port_8(tmp_path: Path) -> None:
    import threading

    from textual.widgets import Static

    from gaudi_tui.ui.app import GaudiApp
    from gaudi_tui.ui.screens.checklist import CheckRow
    from tests.conftest import CPU
    from tests.doctor.test_checklist_screen import open_checklist, run_to_end

    down = snapshot("made-gaudi2-x8-nic-link-card3-port8-down.txt", PORTS)

    def factory(cancel: threading.Event):  # noqa: ANN202
        return make_ctx(tmp_path, fakes=False, snapshot=down, cancel=cancel)

    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_checklist(pilot, factory)
        await run_to_end(pilot, screen)
        row = screen.query_one("#row-nic-external_up", CheckRow)
        assert row.has_class("-fail")
        assert "card 3 (module 7): external port 8 DOWN" in str(
            row.query_one(".row-finding", Static).render()
        )
