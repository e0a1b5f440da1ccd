"""One run folder whose reading raises does not stop the Training list, `gaudi-tui jobs` or the
selected job's panes (issue 38, A.4): its row (or its Details) says why, it is logged once, and
every other run is still read.

The first test uses a hostile metrics.jsonl that raises in today's readers. The others make one
run's reading raise on purpose (a monkeypatched reader): A.4 is about what any bug in any reader
raises, and the hostile inputs that raise today are being fixed at their readers."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.monitor import Monitor
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.ui.screens.training_poll import JobsPoller
from tests.jobs.conftest import replay

HOSTILE = '{"event": "log", "step": 1, "time": 1.0, "loss": 1.0}\n{"event": "log", "step": 2, "time": "x"}\n'


def test_a_run_with_a_hostile_metrics_file_does_not_stop_jobs(capsys: pytest.CaptureFixture[str]) -> None:
    bad = runfolder.create(JobSpec(name="hostile"), accelerator="cpu")
    bad.metrics_path.write_text(HOSTILE)
    good = replay()
    assert main(["jobs", "--json"]) == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)}
    assert set(rows) == {bad.id, good.id}
    assert rows[good.id]["state"] == "succeeded" and rows[good.id]["step"] > 0
    assert rows[bad.id]["name"] == "hostile"


@pytest.fixture
def one_raises(monkeypatch: pytest.MonkeyPatch) -> dict[str, RunFolder]:
    """Two runs; reading the spec of `bad` raises (until `bad` is taken out of the dict)."""
    runs = {"bad": runfolder.create(JobSpec(name="broken"), accelerator="cpu"), "good": replay()}
    row_spec = RunFolder.row_spec

    def raising(self: RunFolder) -> JobSpec:
        if "bad" in runs and self.path == runs["bad"].path:
            raise RuntimeError("a reader's bug")
        return row_spec(self)

    monkeypatch.setattr(RunFolder, "row_spec", raising)
    return runs


def test_the_row_says_why_it_is_logged_once_and_it_clears(
    one_raises: dict[str, RunFolder], caplog: pytest.LogCaptureFixture
) -> None:
    bad, good = one_raises["bad"], one_raises["good"]
    monitor = Monitor()
    with caplog.at_level(logging.ERROR, logger="gaudi_tui.core.jobs.monitor"):
        for _ in range(3):
            views = {v.id: v for v in monitor.poll(eager=bad.id)}
    assert views[good.id].state == "succeeded" and views[good.id].error is None
    assert views[bad.id].error == "cannot read this run: RuntimeError: a reader's bug"
    assert [r.getMessage() for r in caplog.records] == [f"job list: cannot read run {bad.id}"]
    del one_raises["bad"]  # the file is mended
    views = {v.id: v for v in monitor.poll(eager=bad.id)}
    assert views[bad.id].error is None and views[bad.id].name == "broken"


def test_the_selected_runs_details_say_why_and_the_list_goes_on(tmp_path: Path) -> None:
    good, bad = replay(), runfolder.create(JobSpec(name="broken"), accelerator="cpu")

    def describe(view, run, spec, nodes) -> str:  # noqa: ANN001
        if run.id == bad.id:
            raise ValueError("a describer's bug")
        return f"details of {view.name}"

    poller = JobsPoller(describe, lambda run: "")
    message = poller.poll(bad.id, history=False)
    assert message is not None and {v.id for v in message.changed} == {good.id, bad.id}
    assert message.detail is not None and message.detail.run_id == bad.id
    assert message.detail.text == "Cannot read this run's details: ValueError: a describer's bug"
    again = poller.poll(bad.id, history=False)
    assert again is None or again.detail is None  # said once, not posted at every poll
    message = poller.poll(good.id, history=False)
    assert message is not None and message.detail is not None and message.detail.text.startswith("details of")


async def test_the_insight_panel_says_why_and_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from textual.app import App, ComposeResult

    from gaudi_tui.core.jobs.insight.report import InsightWatcher
    from gaudi_tui.ui.widgets.insight_panel import InsightPanel
    from tests.pilot import settle

    bad, good = runfolder.create(JobSpec(name="broken"), accelerator="cpu"), replay()
    poll = InsightWatcher.poll

    def raising(self: InsightWatcher, catch_up: bool = False) -> bool:
        if self.run.id == bad.id:
            raise OverflowError("a runtime reader's bug")
        return poll(self, catch_up)

    monkeypatch.setattr(InsightWatcher, "poll", raising)
    selected = bad.id

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield InsightPanel(lambda: selected)

    app = Host()
    with caplog.at_level(logging.ERROR, logger="gaudi_tui.ui.widgets.insight_panel"):
        async with app.run_test() as pilot:
            panel = app.query_one(InsightPanel)
            await settle(pilot, lambda: panel.polls >= 3, what="three polls of the broken run")
            assert "cannot read this run's runtime metrics: OverflowError" in str(panel.render())
            selected = good.id
            await settle(pilot, lambda: panel.worked_out >= 1, what="the next run worked out")
    assert [r.getMessage() for r in caplog.records] == [f"insight: cannot read run {bad.id}"]
