"""The Training screen shows a Gaudi job's findings in Details and its compiles beside the loss."""

from __future__ import annotations

from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.widgets.insight_panel import CompilesChart, InsightPanel
from tests.conftest import CPU
from tests.insight.test_findings import compiles_at, make_run, write_logs, write_runtime


async def settle(pilot, predicate, timeout: float = 10.0) -> None:  # noqa: ANN001
    for _ in range(int(timeout / 0.1)):
        if predicate():
            return
        await pilot.pause(0.1)
    raise AssertionError("the screen did not reach the expected state")


async def test_a_recompiling_job_shows_its_finding_and_compile_chart() -> None:
    run = make_run()
    write_logs(run, range(1, 21))
    write_runtime(run.hpu_metrics_path, compiles_at(list(range(1, 21))))
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(110, 40)) as pilot:
        await pilot.press("4")
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
