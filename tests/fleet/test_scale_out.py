"""The scale-out network end to end with a real Prometheus: a `gaudi-tui exporter` on the fake hl-smi
(the real recorded busy Gaudi 2 table; NIC links made from documentation) whose card 3 loses external
port 8 after the first round of `hl-smi -n link`: the exporter serves Intel's
`habanalabs_nic_port_status{port,port_type}`, Fleet flags the host, keeps card 3 out of the
multi-host size and lists the down port in the host detail."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gaudi_tui.core.fleet import fetch
from gaudi_tui.core.fleet.model import Fleet
from gaudi_tui.core.fleet.prometheus import PrometheusClient
from gaudi_tui.ui.app import GaudiApp
from tests import required
from tests.conftest import CPU, PYTHON, ROOT, child_env
from tests.fleet.stack import Exporter, free_port, prometheus_config, start_prometheus, stop, wait_http

pytestmark = pytest.mark.slow
LINKS = "made-gaudi2-x8-nic-link-up.txt,made-gaudi2-x8-nic-link-card3-port8-down.txt"


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[Exporter, str]]:
    required.tools("prometheus", "prometheus")
    workdir = Path(tempfile.mkdtemp(prefix="gaudi-tui-scale-out-"))
    env = {
        "FAKE_HLSMI_LINK": LINKS,
        "FAKE_HLSMI_LINK_AFTER": "8",
        "FAKE_HLSMI_LOG": str(workdir / "hl-smi.log"),
    }
    exporter = Exporter(
        "gaudi2-hl225-x8-1.20.0-busy-table.txt", free_port(), workdir, env=env, args=("--links-interval", "1")
    )
    prometheus = None
    try:
        exporter.start()
        prometheus, url = start_prometheus(prometheus_config([exporter.instance]), workdir)
        yield exporter, url
    finally:
        if prometheus is not None:
            stop(prometheus)
        if exporter.process is not None:
            stop(exporter.process)
        shutil.rmtree(workdir, ignore_errors=True)


def port_lines(text: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(card id, port) → (port_type, value) of every habanalabs_nic_port_status line."""
    found = {}
    for line in text.splitlines():
        if line.startswith("habanalabs_nic_port_status{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
            found[(labels["id"], labels["port"])] = (labels["port_type"], line.rsplit(" ", 1)[1])
    return found


def wait_down(url: str) -> Fleet:
    client = PrometheusClient(url)
    deadline = time.monotonic() + 60
    while True:
        fleet = fetch.refresh(client)
        if fleet.hosts and fleet.hosts[0].down_ports():
            return fleet
        assert time.monotonic() < deadline, f"no scale-out port went down: {fleet}"
        time.sleep(0.3)


def test_exporter_serves_the_port_then_fleet_flags_it(stack: tuple[Exporter, str]) -> None:
    exporter, url = stack
    metrics = f"http://{exporter.instance}/metrics"
    first = port_lines(wait_http(metrics, 60, want="habanalabs_nic_port_status{"))
    assert len(first) == 8 * 24 and first[("0", "22")] == ("external", "1.0")
    assert first[("0", "0")] == ("internal", "1.0")
    deadline = time.monotonic() + 60
    while port_lines(wait_http(metrics, 10))[("3", "8")] != ("external", "0.0"):
        assert time.monotonic() < deadline, "card 3 port 8 never went down on /metrics"
        time.sleep(0.3)
    fleet = wait_down(url)
    (host,) = fleet.hosts
    assert host.down_ports() == ["card 3: port 8"] and "scale-out down 1" in host.flags
    assert host.cards[3].flags == ("scale-out down",) and host.fits(1) and not host.fits(16)
    done = subprocess.run(
        [PYTHON, "-m", "gaudi_tui", "--prometheus", url, "fleet"],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
        cwd=ROOT,
    )
    assert done.returncode == 0 and "scale-out down 1" in done.stdout, done.stdout + done.stderr


async def test_fleet_screen_and_host_detail_name_card_3_and_port_8(stack: tuple[Exporter, str]) -> None:
    from textual.widgets import Static

    from gaudi_tui.ui.screens.fleet import FleetScreen
    from gaudi_tui.ui.screens.fleet_host import HostScreen
    from gaudi_tui.ui.widgets.host_grid import HostGrid

    _, url = stack
    wait_down(url)
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host", prometheus=url)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        deadline = time.monotonic() + 30
        while screen.overview is None or not screen.overview.hosts or not screen.ready:
            assert time.monotonic() < deadline, "the Fleet screen never loaded"
            await pilot.pause(0.2)
        grid = screen.query_one(HostGrid)
        assert "scale-out down 1" in grid.row_text(0)[5]
        for _ in range(4):  # job sizes 1, 2, 4, 8 → 16
            await pilot.press("j")
        status = str(screen.query_one("#fleet-status", Static).render())
        assert "a 16-card job needs 2 whole hosts with scale-out up: 0 ready, does not fit" in status
        await pilot.press("enter")
        assert isinstance(app.screen, HostScreen)
        down = str(app.screen.query_one("#host-ports-down", Static).render())
        assert "card 3: port 8" in down and "multi-node jobs using these cards fail" in down
