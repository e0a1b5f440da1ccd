"""The Slurm supervisor follows its job on past a poll whose check raises (issue 38, A.4): slurm.json
cannot be written for a while (a directory stands in its place) when the job leaves the queue for
its node, so recording the queue's state raises. The raise once ended the supervisor, and the job
ran on in Slurm unwatched, shown as lost. Now it is said once in supervisor.log, the job followed,
and its end recorded once the file can be written. The real loopback cluster (tests/slurm/cluster.py);
the job waits for its begin time (`--begin`) until the test moves it to now."""

from __future__ import annotations

import shutil
from pathlib import Path

from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.targets.slurm import record as slurm_record
from tests.jobs.conftest import log_tail, wait_done, wait_for
from tests.slurm.cluster import SlurmTestCluster
from tests.slurm.test_slurm_hardening import nap_spec, record
from tests.slurm.test_slurm_jobs import CPU

FAILED = "recording the queue's state failed"


def started_with_its_record_blocked(slurm: SlurmTestCluster, tmp_path: Path) -> tuple[RunFolder, str]:
    """A job held pending (`--begin`) until slurm.json is made unwritable (a directory stands in its
    place: writing it raises IsADirectoryError), then moved to start now; with the record it had."""
    work = tmp_path / "work"
    work.mkdir()
    run = control.submit(nap_spec(work, 1, slurm_options=("--begin=now+600",)), CPU)
    pending = wait_for(
        lambda: record(run).job_id is not None and record(run), 60, "the job id\n" + log_tail(run)
    )
    path = slurm_record.path(run)
    kept = path.read_text()
    path.unlink()
    path.mkdir()
    (path / "in-the-way").write_text("")
    slurm.run("scontrol", "update", f"JobId={pending.job_id}", "StartTime=now")  # type: ignore[attr-defined]
    return run, kept


def test_a_poll_whose_state_record_raises_is_said_once_and_the_job_followed_to_its_end(
    slurm: SlurmTestCluster, tmp_path: Path
) -> None:
    run, kept = started_with_its_record_blocked(slurm, tmp_path)
    path = slurm_record.path(run)
    said = run.path / "supervisor.log"

    def failed_or_gone() -> bool:
        status = run.status()
        gone = status is None or status.supervisor is None or not status.supervisor.alive()
        return FAILED in said.read_text() or gone

    wait_for(failed_or_gone, 60, "the failed record, said")
    assert FAILED in said.read_text(), said.read_text()
    shutil.rmtree(path)
    path.write_text(kept)
    assert wait_done(run, 90) == "succeeded", log_tail(run)
    assert "woke" in run.log_path.read_text()
    assert said.read_text().count(FAILED) == 1


def test_a_job_that_ends_while_its_record_cannot_be_written_is_still_recorded_as_ended(
    slurm: SlurmTestCluster, tmp_path: Path
) -> None:
    """slurm.json stays unwritable to the job's end: the end goes to status.json all the same (the
    supervisor once died at that last write, and a job that had succeeded showed as lost)."""
    run, _ = started_with_its_record_blocked(slurm, tmp_path)
    assert wait_done(run, 90) == "succeeded", log_tail(run)
    said = (run.path / "supervisor.log").read_text()
    assert "recording the job's end failed" in said and "Traceback" in said
    assert "woke" in run.log_path.read_text()
