"""Compare at 80×24 and 100×30 (issue 42 item 3): every chart keeps at least 6 rows — one chart at a
time, `n` (in the footer) for the next — and the final table and the diff stay on screen; a tall
terminal keeps the grid of five. Recorded runs (tests/jobs/data: real runs, fixed times)."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Footer

from gaudi_tui.core.jobs import compare as compare_mod
from gaudi_tui.ui.screens.job_compare import MIN_CHART_ROWS, JobCompareScreen
from gaudi_tui.ui.widgets.metric_charts import Chart
from tests.jobs.conftest import replay
from tests.jobs.test_job_compare_screen import open_comparison
from tests.jobs.test_training_screen import make_app
from tests.pilot import settle


def shown_charts(screen: JobCompareScreen) -> dict[str, int]:
    """The charts on screen, with their height in rows."""
    return {
        chart.id or "": chart.region.height
        for chart in screen.query(Chart)
        if chart.display and chart.region.height > 0
    }


def footer_keys(screen: JobCompareScreen) -> set[str]:
    """The keys the footer shows now: it is composed again after the screen's bindings change."""
    return {b.key for b in screen.query_one(Footer).query("FooterKey")}  # type: ignore[attr-defined]


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_a_short_terminal_shows_one_tall_chart_at_a_time(size: tuple[int, int]) -> None:
    replay(), replay(recorded="ray-runs")
    app = make_app()
    async with app.run_test(size=size) as pilot:
        screen = await open_comparison(pilot, 2)
        await pilot.pause()
        seen = []
        for _ in compare_mod.CHARTS:
            charts = shown_charts(screen)
            assert len(charts) == 1 and min(charts.values()) >= MIN_CHART_ROWS, charts
            seen += list(charts)
            await pilot.press("n")
            await pilot.pause()
        assert seen == [f"compare-{name}" for name in compare_mod.CHARTS]  # n went through all five
        assert list(shown_charts(screen)) == ["compare-loss"]  # and back to the first
        for table_id, rows in (("#compare-final", 3), ("#compare-why", 5), ("#compare-diff", 2)):
            assert screen.query_one(table_id, DataTable).region.height >= rows, table_id
        await settle(pilot, lambda: "n" in footer_keys(screen), what="the footer with n")


async def test_a_tall_terminal_keeps_the_grid_of_five() -> None:
    replay(), replay(recorded="ray-runs")
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_comparison(pilot, 2)
        await pilot.resize_terminal(120, 40)  # made taller while open: the grid comes back
        await settle(pilot, lambda: len(shown_charts(screen)) == len(compare_mod.CHARTS), what="the grid")
        charts = shown_charts(screen)
        assert len(charts) == len(compare_mod.CHARTS) and min(charts.values()) >= MIN_CHART_ROWS, charts
        await settle(pilot, lambda: "n" not in footer_keys(screen), what="the footer without n")


def test_snapshot_at_80_by_24(snap_compare) -> None:  # noqa: ANN001 - pytest-textual-snapshot fixture
    replay(), replay(recorded="ray-runs")

    async def until_drawn(pilot) -> None:  # noqa: ANN001
        await open_comparison(pilot, 2)
        await pilot.pause(0.3)

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=until_drawn)
