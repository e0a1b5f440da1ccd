"""Training · compare with Pilot and as an SVG snapshot, on recorded run folders of two targets and
two kinds (tests/jobs/data and tests/commands/data: real runs, fixed times)."""

from __future__ import annotations

import shutil

from textual.widgets import DataTable

from gaudi_tui.core.jobs import compare_why
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.job_compare import JobCompareScreen
from gaudi_tui.ui.screens.training import TrainingScreen
from tests.jobs.conftest import DATA, replay
from tests.jobs.test_training_screen import make_app, rows
from tests.pilot import settle

COMMAND_RUN = next((DATA.parent.parent / "commands" / "data" / "runs").iterdir())


def cells(screen: JobCompareScreen, table_id: str) -> list[list[str]]:
    table = screen.query_one(table_id, DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def open_comparison(pilot, count: int) -> JobCompareScreen:  # noqa: ANN001
    """Training, every run marked (from the top of the list down), then C."""
    app: GaudiApp = pilot.app
    await pilot.press("4")
    await settle(pilot, lambda: len(rows(app)) == count)
    for i in range(count):
        await pilot.press("m", *(["down"] if i < count - 1 else []))
    await pilot.press("C")
    screen = app.screen
    assert isinstance(screen, JobCompareScreen)
    await settle(pilot, lambda: screen.comparison is not None)
    return screen


async def test_marked_runs_of_other_targets_and_kinds_side_by_side() -> None:
    local, ray = replay(), replay(recorded="ray-runs")
    command = replay(str(COMMAND_RUN), recorded="runs")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_comparison(pilot, 3)
        training = app.screen_stack[-2]
        assert isinstance(training, TrainingScreen)
        jobs = training.query_one("#jobs", DataTable)
        assert [str(jobs.get_row_at(i)[0]) for i in range(jobs.row_count)] == [
            f"● train.py · {command.id[-4:]}",
            f"● demo fine-tune · {ray.id[-4:]}",
            f"● demo fine-tune · {local.id[-4:]}",
        ]
        final = cells(screen, "#compare-final")
        assert [row[:3] for row in final] == [
            [f"━━ train.py · {command.id[-4:]}", "stopped", "96"],
            [f"━━ demo fine-tune · {ray.id[-4:]}", "succeeded", "60"],
            [f"━━ demo fine-tune · {local.id[-4:]}", "succeeded", "200"],
        ]
        assert final[2][-1] == "3:42"
        why = cells(screen, "#compare-why")  # one row a figure, one column a run (recorded: none)
        assert [row[0] for row in why] == list(compare_why.ROWS)
        assert why[-1][1:] == ["Gaudi runs only"] * 3 and why[2][1:] == ["none taken"] * 3
        diff = {row[0]: row[1:] for row in cells(screen, "#compare-diff")}
        assert diff["target"] == ["local", "ray", "local"]
        assert diff["kind"] == ["command", "trainer", "trainer"]
        assert "model" not in diff
        loss = screen.query_one("#compare-loss").plt._active  # noqa: SLF001 - plotext state
        assert len(loss.monitor.x) == 3
        await pilot.press("a")
        assert {row[0] for row in cells(screen, "#compare-diff")} >= {"model", "target", "run.nodes"}
        await pilot.press("escape")
        assert app.screen is training


async def test_compare_needs_two_marked_runs_and_m_unmarks() -> None:
    replay(), replay(recorded="ray-runs")
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        await settle(pilot, lambda: len(rows(app)) == 2)
        training = app.screen
        assert isinstance(training, TrainingScreen)
        await pilot.press("m", "C")
        assert app.screen is training
        await settle(pilot, lambda: any("1 marked" in n.message for n in app._notifications))  # noqa: SLF001
        await pilot.press("m")
        assert training.marked == [] and not rows(app)[0][0].startswith("●")


async def test_a_marked_run_removed_before_the_comparison_is_named() -> None:
    local, ray = replay(), replay(recorded="ray-runs")
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        await settle(pilot, lambda: len(rows(app)) == 2)
        await pilot.press("m", "down", "m")
        shutil.rmtree(local.path)
        await pilot.press("C")
        screen = app.screen
        assert isinstance(screen, JobCompareScreen)
        status = screen.query_one("#compare-status")
        await settle(pilot, lambda: "cannot compare" in str(status.render()))
        assert f"no job {local.id!r}" in str(status.render()) and ray.id in screen.run_ids
        await pilot.press("escape")
        assert isinstance(app.screen, TrainingScreen)


def test_snapshot_of_two_runs_side_by_side(snap_compare) -> None:  # noqa: ANN001 - pytest-textual-snapshot fixture
    replay(), replay(recorded="ray-runs")

    async def until_drawn(pilot) -> None:  # noqa: ANN001
        await open_comparison(pilot, 2)
        await pilot.pause(0.3)

    assert snap_compare(make_app(), terminal_size=(100, 30), run_before=until_drawn)
