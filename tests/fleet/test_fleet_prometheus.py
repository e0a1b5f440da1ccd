"""End to end with a real Prometheus: three `gaudi-tui exporter`s replaying real hl-smi samples and a
target that never answers, read by `gaudi-tui fleet --json` and the Fleet screen."""

from __future__ import annotations

import json
import subprocess
import time
from typing import TYPE_CHECKING

import pytest

from gaudi_tui.core.fleet import fetch
from gaudi_tui.core.fleet.model import Fleet, Host
from gaudi_tui.core.fleet.prometheus import PrometheusClient
from gaudi_tui.ui.app import GaudiApp
from tests.conftest import CPU, PYTHON, ROOT, child_env
from tests.fleet.stack import CARD_VALUES, REPLAYED, SCRAPE_S, FleetStack, expected_cards
from tests.pilot import settle

if TYPE_CHECKING:
    from gaudi_tui.ui.screens.fleet import FleetScreen

pytestmark = pytest.mark.slow


def wait_fleet(stack: FleetStack, ready, timeout: float = 60.0) -> Fleet:  # noqa: ANN001 (predicate)
    """Refresh until `ready(fleet)` holds (Prometheus needs a few scrapes first)."""
    client = PrometheusClient(stack.url)
    deadline = time.monotonic() + timeout
    fleet = fetch.refresh(client)
    while not ready(fleet):
        if time.monotonic() > deadline:
            raise AssertionError(f"the fleet never got ready: {fleet}")
        time.sleep(0.25)
        fleet = fetch.refresh(client)
    return fleet


async def open_fleet(pilot, app: GaudiApp) -> FleetScreen:  # noqa: ANN001 (a Pilot)
    """Key 5, then wait until the screen shows the stack's 4 hosts with the cards of those on screen."""
    from gaudi_tui.ui.screens.fleet import FleetScreen

    await pilot.press("5")
    screen = app.screen
    assert isinstance(screen, FleetScreen)
    ready = lambda: screen.overview is not None and len(screen.overview.hosts) >= 4 and screen.ready  # noqa: E731
    await settle(pilot, ready, 30, "the Fleet screen")
    return screen


def all_up(stack: FleetStack):  # noqa: ANN201
    def ready(fleet: Fleet) -> bool:
        hosts = {h.name: h for h in fleet.hosts}
        return (
            all(
                e.instance in hosts and hosts[e.instance].state == "up" and len(hosts[e.instance].cards) == 8
                for e in stack.exporters
            )
            and stack.dead in hosts
        )

    return ready


def host_of(fleet: Fleet, name: str) -> Host:
    return next(h for h in fleet.hosts if h.name == name)


def test_fleet_json_shows_the_replayed_values_and_the_dead_target(fleet_stack: FleetStack) -> None:
    wait_fleet(fleet_stack, all_up(fleet_stack))
    done = subprocess.run(
        [PYTHON, "-m", "gaudi_tui", "--prometheus", fleet_stack.url, "fleet", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    hosts = {h["host"]: h for h in report["hosts"]}
    assert set(hosts) == {e.instance for e in fleet_stack.exporters} | {fleet_stack.dead}
    for exporter in fleet_stack.exporters:
        host = hosts[exporter.instance]
        assert host["state"] == "up" and host["job"] == "gaudi" and host["flags"] == []
        got = [{k: card[k] for k in CARD_VALUES} for card in host["cards"]]
        assert got == expected_cards(exporter.sample), exporter.sample
    dead = hosts[fleet_stack.dead]
    assert dead["state"] == "down" and dead["cards"] == [] and "down" in dead["flags"]
    busy = hosts[fleet_stack.exporters[1].instance]  # the Gaudi 2 sample: cards 3, 5, 7 hold HBM
    assert busy["free_cards"] == [0, 1, 2, 4, 6]
    assert busy["fits"] == {"1": True, "2": True, "4": False, "8": False, "16": False}
    assert hosts[fleet_stack.exporters[0].instance]["fits"]["8"] is True
    # Our exporter has no slowdown threshold nor pending rows: the banner says so, nothing is made up.
    assert report["absent_metrics"] == [
        "habanalabs_temperature_threshold_slowdown",
        "habanalabs_pending_rows_state",
    ]


async def test_fleet_screen_shows_every_host_with_its_values(fleet_stack: FleetStack) -> None:
    from textual.widgets import DataTable

    from gaudi_tui.ui.screens.fleet import FleetScreen
    from gaudi_tui.ui.widgets.host_grid import HostGrid

    wait_fleet(fleet_stack, all_up(fleet_stack))
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host", prometheus=fleet_stack.url)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_fleet(pilot, app)
        grid = screen.query_one(HostGrid)
        rows = {grid.row_text(i)[0]: grid.row_text(i) for i in range(grid.row_count)}
        assert set(rows) == {e.instance for e in fleet_stack.exporters} | {fleet_stack.dead}
        assert rows[fleet_stack.dead][1] == "down"
        for exporter in fleet_stack.exporters:
            utils = [f"{c['utilization_pct']:3.0f}" for c in expected_cards(exporter.sample)]
            assert rows[exporter.instance][2] == " ".join(utils) + " "
        await pilot.press("m")  # HBM %
        busy = fleet_stack.exporters[1].instance
        row = next(grid.row_text(i) for i in range(grid.row_count) if grid.row_text(i)[0] == busy)
        shares = [
            f"{c['memory_used_bytes'] / c['memory_total_bytes'] * 100:3.0f}"
            for c in expected_cards(REPLAYED[1])
        ]
        assert row[2] == " ".join(shares) + " "
        # Enter opens the host with its cards and a 5-minute history from query_range.
        grid.cursor_row = [row.host.name for row in grid.hosts].index(busy)
        await pilot.press("enter")
        from gaudi_tui.ui.screens.fleet_host import HostScreen

        assert isinstance(app.screen, HostScreen)
        host_screen = app.screen
        deadline = time.monotonic() + 30
        while not host_screen.history:
            assert time.monotonic() < deadline, "no history arrived"
            await pilot.pause(0.2)
        cards = host_screen.query_one(DataTable)
        assert cards.row_count == 8
        assert str(cards.get_row_at(3)[3]) == "94/96"  # 96,565 MiB of 98,304 reserved on card 3
        assert any(ch in str(cards.get_row_at(0)[5]) for ch in "▁▂▃▄▅▆▇█")  # power sparkline
        await pilot.press("escape")
        assert isinstance(app.screen, FleetScreen)


def test_killed_exporter_is_down_within_three_scrapes_and_recovers(fleet_stack: FleetStack) -> None:
    wait_fleet(fleet_stack, all_up(fleet_stack))
    victim = fleet_stack.exporters[2]
    killed_at = time.time()
    victim.kill()
    fleet = wait_fleet(fleet_stack, lambda f: host_of(f, victim.instance).state == "down", timeout=30)
    down = host_of(fleet, victim.instance)
    assert down.cards == () and "down" in down.flags
    # A scrape is stamped when it starts: one already under way at the kill counts as the first.
    after = [(t, v) for t, v in fleet_stack.raw_up(victim.instance) if t > killed_at - SCRAPE_S]
    first_zero = next((i for i, (_, v) in enumerate(after) if v == 0), None)
    assert first_zero is not None, f"no failed scrape stored, though the fleet says down: {after}"
    assert first_zero < 3, f"scrapes after the kill: {after}"
    others = [host_of(fleet, e.instance).state for e in fleet_stack.exporters if e is not victim]
    assert others == ["up", "up"]
    victim.start()
    fleet = wait_fleet(fleet_stack, all_up(fleet_stack), timeout=60)
    back = host_of(fleet, victim.instance)
    assert back.flags == () and len(back.cards) == 8


def test_prometheus_errors_and_an_empty_server_become_problems(fleet_stack: FleetStack, tmp_path) -> None:  # noqa: ANN001
    from gaudi_tui.core.fleet.prometheus import PrometheusError
    from tests.fleet.stack import start_prometheus, stop

    with pytest.raises(PrometheusError, match="HTTP 400.*parse error"):
        PrometheusClient(fleet_stack.url).query("sum(")
    process, url = start_prometheus("global:\n  scrape_interval: 1s\nscrape_configs: []\n", tmp_path)
    try:
        fleet = fetch.refresh(PrometheusClient(url))
    finally:
        stop(process)
    assert fleet.hosts == ()
    assert fleet.problems == (
        f"Prometheus at {url} has no habanalabs_device_config series and no target of a job that has: "
        "is an exporter (Intel's or `gaudi-tui exporter`) scraped?",
    )


def test_card_values_read_from_the_answer_bytes_equal_the_json_decode(fleet_stack: FleetStack) -> None:
    """`card_values` reads `… by (instance, id)` answers straight from their bytes; on the real
    server it must give what the JSON decode gives, and any other shape goes through JSON."""
    wait_fleet(fleet_stack, all_up(fleet_stack))
    client = PrometheusClient(fleet_stack.url, timeout=10)
    promql = fetch.fleet_queries()["habanalabs_utilization"]
    fast = client.card_values(promql)
    assert len(fast) == 8 * len(fleet_stack.exporters)
    decoded = [(s.labels["instance"], s.labels["id"], s.value) for s in client.query(promql)]
    assert sorted(fast) == sorted(decoded)
    # A series without `id` (here: `up` by instance) and an escaped label both take the JSON path.
    assert client.card_values("max by (instance) (up)") == []
    escaped = 'label_replace(max by (instance, id) (habanalabs_utilization), "instance", "a\\"$1", "instance", "(.*)")'
    assert {i for i, _, _ in client.card_values(escaped)} == {
        'a"' + e.instance for e in fleet_stack.exporters
    }


async def test_rows_scrolled_into_view_get_their_cards(fleet_stack: FleetStack) -> None:
    """On a short terminal the refresh asks for the cards of the rows on screen only; the rows
    scrolled to get theirs from one more query."""
    from gaudi_tui.ui.widgets.host_grid import HostGrid

    wait_fleet(fleet_stack, all_up(fleet_stack))
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host", prometheus=fleet_stack.url)
    async with app.run_test(size=(80, 11)) as pilot:
        screen = await open_fleet(pilot, app)
        grid = screen.query_one(HostGrid)
        deadline = time.monotonic() + 30
        shown = [row.host.name for row in grid.rows_on_screen()]
        assert 0 < len(shown) < 4 and set(screen.cards) <= set(shown)
        last = grid.hosts[-1].host.name
        assert last not in screen.cards and grid.hosts[-1].host.state == "up"
        await pilot.press("end")  # the last host comes into view
        while last not in screen.cards or not screen.ready:
            assert time.monotonic() < deadline, "the row scrolled to never got its cards"
            await pilot.pause(0.1)
        row = grid.row_text(len(grid.hosts) - 1)
        assert row[0] == last and "·" not in row[2] and len(row[2].split()) == 8
