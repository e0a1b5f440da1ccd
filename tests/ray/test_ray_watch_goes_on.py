"""The Ray supervisor's watch survives a check that raises, as the local and Slurm ones do
(tests/jobs/test_watch_checks_go_on.py, tests/slurm/test_slurm_watch_goes_on.py): the job's record
could not be written (a full disk, a bug: any exception), and the supervisor died of it, leaving the
job running on the cluster unwatched and shown as lost. A real job on the test cluster is watched in
this process; the record's write is made to raise on purpose."""

from __future__ import annotations

import sys
import threading

import pytest

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.targets.ray import supervise
from gaudi_tui.core.jobs.targets.ray.mirror import LogMirror
from gaudi_tui.core.jobs.targets.ray.record import ClusterRecord
from tests.ray.cluster import RayTestCluster

SLEEP_S = supervise.RECORD_S + 4
"""Long enough for the record's first write (RECORD_S after the watch starts) and a second try."""


def test_the_job_is_followed_to_its_end_when_its_record_cannot_be_written(
    ray_cluster: RayTestCluster, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tries: list[ClusterRecord] = []

    def full_disk(run: object, record: ClusterRecord) -> None:
        tries.append(record)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(supervise, "write_record", full_disk)
    spec = JobSpec(name="followed", target="ray", ray_address=ray_cluster.address)
    run = runfolder.create(spec, accelerator="cpu")
    attempt = Attempt(run, spec, None, False, threading.Event(),
                      lambda **changes: None, lambda: JobStatus(state="running"))  # fmt: skip
    supervision = supervise.Supervision(attempt)
    record = ClusterRecord(ray_cluster.address, f"gaudi-tui-{run.id}-a1", 1)
    # a driver that joins the cluster gets its Ray job id: the record's first write is due then
    driver = f"import ray, time; ray.init(); time.sleep({SLEEP_S:g})"
    supervision.jobs.submit(record.submission_id, f"{sys.executable} -c '{driver}'", {}, {})
    supervision.mirror = LogMirror(run, record)
    stream = supervise.LogStream(supervision.jobs, record.submission_id, supervision.mirror)
    stream.start()
    info = supervision._watch(record, stream)
    assert info is not None and info.state == "SUCCEEDED", info
    assert tries and tries[-1].ray_job_id == info.job_id  # it was tried, with what the cluster said
    said = capsys.readouterr().err
    assert (
        said.count("recording the job's ranks failed (tried again at each poll; the job is followed on)") == 1
    )
    assert "No space left on device" in said
