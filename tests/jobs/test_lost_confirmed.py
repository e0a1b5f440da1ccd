"""A job is called lost only after its status.json was read again (issue 38, H9): a supervisor writes
its last status and exits, so a reader holding the status from before that write, which then finds
the supervisor gone, would call a job that succeeded lost."""

from __future__ import annotations

import subprocess
import time

import pytest

from gaudi_tui.commands.jobs import follow_metrics
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.liveness import current
from gaudi_tui.core.jobs.monitor import RunWatcher
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus, ProcRef
from gaudi_tui.core.jobs.tailing import MetricsReader
from tests.conftest import PYTHON


def gone_supervisor() -> ProcRef:
    """A process that has exited, as a supervisor that wrote its last status and left."""
    child = subprocess.Popen([PYTHON, "-c", "pass"])
    ref = ProcRef.of(child.pid)
    child.wait()
    assert ref is not None and not ref.alive()
    return ref


def running_run() -> tuple[RunFolder, JobStatus]:
    run = runfolder.create(JobSpec(name="fast"), accelerator="cpu")
    now = time.time()
    status = JobStatus(state="running", created=now, queued=now, started=now, supervisor=gone_supervisor())
    run.write_status(status)
    return run, status


def finish(run: RunFolder, status: JobStatus) -> None:
    run.write_status(status.with_(state="succeeded", exit_code=0, ended=time.time()))


def test_a_stale_active_status_is_read_again_before_the_job_counts_as_lost() -> None:
    run, stale = running_run()
    assert current(run.status_path, stale, time.time())[1] == "lost"  # nothing newer: truly lost
    finish(run, stale)
    status, state = current(run.status_path, stale, time.time())
    assert state == "succeeded" and status.exit_code == 0


def test_the_job_list_does_not_call_a_job_lost_that_ended_after_its_poll() -> None:
    run, stale = running_run()
    watcher = RunWatcher(run)
    watcher.poll()
    finish(run, stale)  # between the poll and the row, as a slow read of metrics lets happen
    view = watcher.view(time.time())
    assert view.state == "succeeded" and view.error is None


def test_follow_does_not_call_a_job_lost_that_succeeded_while_its_metrics_were_read(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run, stale = running_run()
    read = MetricsReader.poll

    def slow_read(self: MetricsReader) -> bool:  # the supervisor ends the job while metrics are read
        finish(run, stale)
        return read(self)

    monkeypatch.setattr(MetricsReader, "poll", slow_read)
    assert follow_metrics(run) == 0
    assert capsys.readouterr().out.strip().endswith(f"{run.id}: succeeded")
