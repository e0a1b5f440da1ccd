"""The Training screen shows a Gaudi job's findings in Details and its compiles beside the loss."""

from __future__ import annotations

import os
import time

from textual.app import App, ComposeResult

from gaudi_tui.core.jobs.status import JobStatus, ProcRef
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.widgets.insight_panel import CompilesChart, InsightPanel
from tests.conftest import CPU
from tests.insight.test_findings import compiles_at, make_run, write_logs, write_runtime
from tests.pilot import settle


async def test_a_recompiling_job_shows_its_finding_and_compile_chart() -> None:
    run = make_run()
    write_logs(run, range(1, 21))
    write_runtime(run.hpu_metrics_path, compiles_at(list(range(1, 21))))
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(110, 40)) as pilot:
        await pilot.press("4")
        await settle(pilot, lambda: bool(app.screen.query(CompilesChart)))  # the panes mount after the list
        chart = app.screen.query_one(CompilesChart)
        await settle(pilot, lambda: chart.display)
        title = chart.plt._active.monitor.title  # noqa: SLF001 - plotext state
        assert title == "graph compiles 20 (15 after warm-up)"
        await pilot.press("d")
        panel = app.screen.query_one(InsightPanel)
        await settle(pilot, lambda: "still compiling" in str(panel.render()))
        shown = str(panel.render())
        assert "! still compiling after warm-up: 10 graphs in the last 10 steps" in shown
        assert "fix: dynamic shapes" in shown


async def test_an_ended_run_is_not_worked_out_again_until_its_files_change() -> None:
    """Idle on a finished run: the insight is worked out once, not at every poll; a new line of its
    metrics.jsonl, or a new status.json (a resume), works it out again."""
    run = make_run()
    write_logs(run, range(1, 21))
    run.write_status(JobStatus(state="succeeded", started=time.time() - 60, ended=time.time()))
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(110, 40)) as pilot:
        await pilot.press("4")
        await settle(pilot, lambda: bool(app.screen.query(InsightPanel)))  # the panes mount after the list
        panel = app.screen.query_one(InsightPanel)
        await settle(pilot, lambda: panel.worked_out == 1)
        polls = panel.polls
        await settle(pilot, lambda: panel.polls >= polls + 3)
        assert panel.worked_out == 1
        write_logs(run, range(21, 22))
        await settle(pilot, lambda: panel.worked_out == 2)
        polls = panel.polls
        await settle(pilot, lambda: panel.polls >= polls + 2)
        assert panel.worked_out == 2
        resumed = JobStatus(
            state="running", attempt=2, started=time.time(), supervisor=ProcRef.of(os.getpid())
        )
        run.write_status(resumed)
        await settle(pilot, lambda: panel.worked_out == 3)
        polls = panel.polls
        await settle(pilot, lambda: panel.polls >= polls + 2)
        assert panel.worked_out > 3  # an active run's insight moves with time: worked out at each poll


async def test_the_insight_waits_until_it_may_poll() -> None:
    """On the Training screen the insight's first read (a long history's) waits for the list's
    first frame: the panel does not poll while `ready` says no."""
    run = make_run()
    write_logs(run, range(1, 6))
    asked: list[bool] = []
    allowed = False

    def ready() -> bool:
        asked.append(allowed)
        return allowed

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield InsightPanel(lambda: run.id, ready)

    app = Host()
    async with app.run_test() as pilot:
        panel = app.query_one(InsightPanel)
        await settle(pilot, lambda: len(asked) >= 3)
        assert panel.polls == 0
        allowed = True
        await settle(pilot, lambda: panel.worked_out == 1)
