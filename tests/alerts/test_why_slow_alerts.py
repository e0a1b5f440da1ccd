"""The input-stall alert from the `stall` events a job writes: a rank's real `StepTimer` (the Trainer
callbacks' clock) that waits 30 ms for each batch of a 10 ms step gives the event; the supervisor's
insight check sends `input_stall` once per attempt with the fix, and a rank that does not wait sends
nothing. (The torch.compile alerts come from a real run: tests/insight/test_plain_loop_wrapped.py.)"""

from __future__ import annotations

import json
import time

from gaudi_tui.core.alerts.config import AlertConfig
from gaudi_tui.core.alerts.jobs import JobAlerts
from gaudi_tui.core.insight.stalls import StepTimer
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from gaudi_tui.core.jobs.kinds import command
from gaudi_tui.core.jobs.spec import JobSpec
from tests.alerts.conftest import kept
from tests.conftest import PYTHON


def stall_event(wait_s: float, steps: int = 5) -> dict[str, object]:
    """One rank's window as its callback writes it: `steps` steps of 10 ms, `wait_s` before each."""
    timer = StepTimer(rank=0)
    for _ in range(steps):
        time.sleep(wait_s)  # the data loader's __next__
        timer.step_begin()
        time.sleep(0.01)  # the step
        timer.step_end()
    event = timer.event(steps)
    assert event is not None
    return event


def job_with(tmp_path, events: list[dict[str, object]]) -> runfolder.RunFolder:  # noqa: ANN001
    spec = command.prepare(
        JobSpec(
            kind="command", name="loader", command=[PYTHON, "-c", "pass"], workdir=str(tmp_path), device="cpu"
        )
    )
    run = runfolder.create(spec, accelerator="cpu")
    begin = {"event": "begin", "time": time.time(), "step": 0, "max_steps": 100, "device": "cpu"}
    lines = [
        begin,
        *({"event": "log", "time": time.time(), "step": s, "loss": 1.0} for s in (5, 10)),
        *events,
    ]
    run.metrics_path.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    return run


def test_a_rank_waiting_for_its_batches_alerts_once_per_attempt_with_the_fix(tmp_path) -> None:  # noqa: ANN001
    run = job_with(tmp_path, [stall_event(0.03)])
    alerts, watcher = JobAlerts(run, run.spec(), AlertConfig()), InsightWatcher(run)
    for attempt in (1, 1, 1, 2):  # the supervisor's checks: the finding holds each time
        for alert in alerts.from_insight(watcher, attempt):
            alerts.send(alert)
    stalls = kept("input_stall")
    assert [a.key for a in stalls] == [f"{run.id}:input_stall:1", f"{run.id}:input_stall:2"]
    assert stalls[0].title == "Waiting for data" and "of each step" in stalls[0].text
    assert "dataloader_num_workers" in stalls[0].text and "tokenize once ahead" in stalls[0].text


def test_a_rank_that_does_not_wait_sends_nothing(tmp_path) -> None:  # noqa: ANN001
    run = job_with(tmp_path, [stall_event(0.0)])
    alerts, watcher = JobAlerts(run, run.spec(), AlertConfig()), InsightWatcher(run)
    assert alerts.from_insight(watcher, 1) == []


def test_turned_off_it_is_not_sent(tmp_path) -> None:  # noqa: ANN001
    run = job_with(tmp_path, [stall_event(0.03)])
    alerts = JobAlerts(run, run.spec(), AlertConfig(off=("input_stall",)))
    for alert in alerts.from_insight(InsightWatcher(run), 1):
        alerts.send(alert)
    assert kept() == []
