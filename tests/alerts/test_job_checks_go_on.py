"""A job's alert checks survive one that raises (issue 38, A.4): the insight check raising at every
poll once ended the stall check too, for the rest of the job. Now the failure goes to supervisor.log
once and the stall alert is still sent. The insight's reader is made to raise on purpose (any bug
in any reader: the hostile runtime files that raise today are being fixed at their reader)."""

from __future__ import annotations

import json
import time

import pytest

from gaudi_tui.core.alerts.config import AlertConfig
from gaudi_tui.core.alerts.jobs import JobAlerts
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus
from tests.alerts.conftest import kept, wait_for


def test_a_stall_is_sent_while_the_insight_check_keeps_raising(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    polls: list[float] = []

    def raising(self: InsightWatcher, catch_up: bool = False) -> bool:
        polls.append(time.monotonic())
        raise OverflowError("a runtime reader's bug")

    monkeypatch.setattr(InsightWatcher, "poll", raising)
    spec = JobSpec(name="stalls")
    run = runfolder.create(spec, accelerator="cpu")
    alerts = JobAlerts(run, spec, AlertConfig(stall_min_s=1.0))
    status = JobStatus(state="running", attempt=1)
    state = [status]
    alerts.watch(lambda: state[0])
    wait_for(lambda: len(polls) >= 2, 20, "two insight checks that raised")
    then = time.time() - 600  # steps that stopped ten minutes ago
    run.metrics_path.write_text(
        "".join(
            json.dumps({"event": "log", "step": s, "time": then + s, "loss": 1.0}) + "\n" for s in range(1, 6)
        )
    )
    wait_for(lambda: kept("job_stalled"), 20, "the stall alert")
    state[0] = status.with_(state="succeeded")
    assert capsys.readouterr().err.count("alerts: the insight check failed") == 1
