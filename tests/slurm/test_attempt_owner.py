"""An attempt is found in the queue by its name and its user (issue 38, H5): squeue lists every
user's jobs and anyone may name a job anything, so after an unclear sbatch answer (or a supervisor
that died during sbatch) a stranger's job named like the attempt is never adopted. Recorded 22.05.8
`squeue --json` (tests/data/slurm/squeue_all.json), with one job handed to another user."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, cast

import pytest

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.targets.slurm import SlurmTarget, submitting
from gaudi_tui.core.jobs.targets.slurm import record as record_mod
from gaudi_tui.core.slurm import model, poll

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
NAME = "gaudi-tui-20261206-101010-demo-ab12-a1"
STRANGER = 4242  # no such user here: squeue would name them, the test needs only that it is not us


def queue(**rows: dict[str, Any]) -> list[model.QueueJob]:
    """The recorded queue, with the rows of these job ids (`j4`, …) changed."""
    data = json.loads((DATA / "squeue_all.json").read_text())
    for row in data["jobs"]:
        row.update(rows.get(f"j{row['job_id']}", {}))
    return model.jobs_from_json(data)


def strangers_job() -> dict[str, Any]:
    return {"name": NAME, "user_name": "mallory", "user_id": STRANGER}


def test_only_this_users_job_of_that_name_is_the_attempts() -> None:
    me = os.getuid()
    jobs = queue(j4=strangers_job(), j7={"name": NAME})  # job 7 is the recording's own user's (root)
    mine = [j.job_id for j in submitting.attempt_jobs(jobs, NAME, uid=0)]
    assert mine == [7]
    assert submitting.attempt_jobs(queue(j4=strangers_job()), NAME, uid=me) == []
    nameless = queue(j4={"name": NAME, "user_name": "", "user_id": 1234567})  # squeue gave only the id
    assert [j.job_id for j in submitting.attempt_jobs(nameless, NAME, uid=1234567)] == [4]


class _Shared:
    def __init__(self, snap: poll.Snapshot) -> None:
        self.snap = snap

    def get(self) -> poll.Snapshot:
        return self.snap


def test_a_strangers_job_of_the_attempts_name_is_not_adopted(monkeypatch: pytest.MonkeyPatch) -> None:
    if os.getuid() == STRANGER:
        pytest.skip("this test's stranger is the user running it")
    snap = poll.Snapshot(time.time(), tuple(queue(j4=strangers_job())))
    monkeypatch.setattr(submitting.poll, "take", lambda slurm: snap)
    monkeypatch.setattr(submitting, "FIND_SUBMITTED_S", 0.0)
    run = runfolder.create(JobSpec(name="demo", target="slurm"), accelerator="cpu")
    attempt = cast(Attempt, type("A", (), {"run": run})())
    assert submitting.look_by_name(attempt, cast(Any, None), NAME) is None  # after sbatch timed out

    record_mod.write(run, record_mod.SlurmRecord(attempt=1, job_name=NAME, script="x"))
    monkeypatch.setattr(poll, "shared", lambda slurm=None: _Shared(snap))
    presence = SlurmTarget().presence(run, JobStatus(state="running", attempt=1))
    assert presence.where == "ended" and presence.reason == f"no Slurm job {NAME} was submitted"
    assert record_mod.read(run).job_id is None  # type: ignore[union-attr]  # not the stranger's 4
