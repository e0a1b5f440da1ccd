"""The Fleet screen by keyboard at 80×24, from the recorded /federate dump of a real Prometheus
(tests/fleet/data/federate-gaudi.txt), and its banners when Prometheus cannot help."""

from __future__ import annotations

import time

from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from gaudi_tui.core.fleet import fetch
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.fleet import FleetScreen
from gaudi_tui.ui.screens.fleet_host import HostScreen
from gaudi_tui.ui.widgets.host_grid import HostGrid
from tests.conftest import CPU, ROOT
from tests.fleet.stack import free_port

FIXTURE = ROOT / "tests" / "fleet" / "data" / "federate-gaudi.txt"


def recorded() -> FleetScreen:
    return FleetScreen(loader=lambda: fetch.from_text(FIXTURE.read_text(), FIXTURE.name, "unused"))


async def loaded(pilot: Pilot, screen: FleetScreen) -> None:
    deadline = time.monotonic() + 20
    while not screen.ready:
        assert time.monotonic() < deadline, "the Fleet screen never loaded"
        await pilot.pause(0.05)
    await pilot.pause()


def hosts_column(screen: FleetScreen, column: int = 0) -> list[str]:
    grid = screen.query_one(HostGrid)
    return [grid.row_text(i)[column] for i in range(grid.row_count)]


def test_fleet_snapshot(snap_compare) -> None:  # noqa: ANN001
    async def show(pilot: Pilot) -> None:
        screen = recorded()
        await pilot.app.push_screen(screen)
        await loaded(pilot, screen)

    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    assert snap_compare(app, terminal_size=(80, 24), run_before=show)


async def test_keys_cycle_metric_sort_job_and_filter() -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = recorded()
        await app.push_screen(screen)
        await loaded(pilot, screen)
        # worst first: the down host leads
        assert hosts_column(screen) == [f"gaudi-node-0{i}:41612" for i in (4, 1, 2, 3)]
        assert hosts_column(screen, 2)[0] == "target down"
        await pilot.press("m")  # HBM %: cards 3, 5, 7 of node 02 hold 98 %, 98 % and 18 % of 96 GiB
        assert hosts_column(screen, 2)[2] == "  1   1   1  98   1  98   1  18 "
        await pilot.press("m", "m")  # temperature in °C
        assert hosts_column(screen, 2)[1] == " 35  36  33  32  35  34  36  33 "
        await pilot.press("s", "s")  # free cards, most first
        assert hosts_column(screen)[-2:] == ["gaudi-node-02:41612", "gaudi-node-04:41612"]
        await pilot.press("j", "j")  # a 4-card job
        assert hosts_column(screen, 4) == ["4:✓", "4:✓", "4:—", "4:—"]
        assert "a 4-card job fits on 2 host(s)" in str(screen.query_one("#fleet-status", Static).render())
        await pilot.press("slash", *"node-02")
        assert hosts_column(screen) == ["gaudi-node-02:41612"]
        await pilot.press("enter")  # keeps the filter, back to the table
        assert isinstance(app.focused, HostGrid)
        await pilot.press("enter")  # opens the host
        assert isinstance(app.screen, HostScreen)
        assert app.screen.query_one(DataTable).row_count == 8
        await pilot.press("escape")
        await pilot.press("slash", "escape")  # clears the filter
        assert len(hosts_column(screen)) == 4
        assert not screen.query_one("#fleet-filter", Input).has_class("shown")


async def test_no_prometheus_banner_and_the_app_stays_usable(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.delenv("GAUDI_TUI_PROMETHEUS", raising=False)
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        banner = app.screen.query_one("#fleet-banner", Static)
        assert banner.has_class("shown") and "No Prometheus server" in str(banner.render())
        await pilot.press("1", "5", "m", "s")
        assert isinstance(app.screen, FleetScreen)


async def test_unreachable_prometheus_banner(monkeypatch) -> None:  # noqa: ANN001
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("GAUDI_TUI_PROMETHEUS", url)
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        await loaded(pilot, screen)
        assert f"Prometheus unreachable at {url}" in str(screen.query_one("#fleet-banner", Static).render())
        await pilot.press("enter", "r")  # nothing to open; refreshing again is fine
        assert app.screen is screen


async def test_a_failed_refresh_keeps_the_last_answer_with_its_age_and_the_reason() -> None:
    from gaudi_tui.core.fleet.model import Fleet

    good = fetch.from_text(FIXTURE.read_text(), FIXTURE.name, "unused")
    reason = "Prometheus unreachable at http://127.0.0.1:9 (timed out); check the URL or the SSH tunnel"
    answers = [good]
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = FleetScreen(loader=lambda: answers[-1])
        await app.push_screen(screen)
        await loaded(pilot, screen)
        banner = screen.query_one("#fleet-banner", Static)
        answers.append(Fleet("http://127.0.0.1:9", problems=(reason,)))
        await pilot.press("r")
        deadline = time.monotonic() + 10
        while reason not in str(banner.render()):
            assert time.monotonic() < deadline, "the failure never showed"
            await pilot.pause(0.05)
        assert "showing the last answer, " in str(banner.render())
        assert len(hosts_column(screen)) == 4 and hosts_column(screen, 2)[1].strip()
        answers.append(good)  # Prometheus answers again: the banner goes
        await pilot.press("r")
        while reason in str(banner.render()):
            assert time.monotonic() < deadline + 10, "the banner stayed"
            await pilot.pause(0.05)


async def test_a_silent_prometheus_shows_the_screen_at_once_and_times_out(monkeypatch) -> None:  # noqa: ANN001
    """A server that takes the connection and never answers: the screen is drawn before any answer
    ("asking Prometheus…"), and the 5 s timeout of each request ends in the banner."""
    from tests.fleet.stack import silent_target

    silent = silent_target()
    url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    monkeypatch.setenv("GAUDI_TUI_PROMETHEUS", url)
    try:
        app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("5")
            screen = app.screen
            assert isinstance(screen, FleetScreen)
            status = screen.query_one("#fleet-status", Static)
            assert f"asking Prometheus at {url}…" in str(status.render())
            assert screen.query_one(HostGrid).row_count == 0
            started = time.monotonic()
            await loaded(pilot, screen)
            banner = str(screen.query_one("#fleet-banner", Static).render())
            assert f"Prometheus unreachable at {url}" in banner and "timed out" in banner
            assert time.monotonic() - started < 15
    finally:
        silent.close()
