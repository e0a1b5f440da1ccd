"""Which Ray cluster answers at a job's address (issue 26 item 15): the submit records the cluster's
identity (its dashboard's session name) in cluster.json, and a "does not exist" speaks for the job
only when the same cluster says it. From another cluster at the same address (a restarted head, a
tunnel re-pointed) the job's end is unknown: `r` starts no second copy, and `k` records the end
with what it could not verify."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.spec import from_mapping
from gaudi_tui.core.jobs.targets import ray as ray_target
from gaudi_tui.core.jobs.targets.ray import cluster, record
from tests.conftest import PYTHON, ROOT
from tests.ray.cluster import RayTestCluster
from tests.ray.test_ray_jobs import submit_when_free, wait, wait_done

pytestmark = pytest.mark.slow


def test_a_job_unknown_to_another_cluster_at_its_address_is_not_ended(
    ray_cluster: RayTestCluster, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "hello.py").write_text("print('hello from the cluster')\n")
    spec = from_mapping(
        {
            "kind": "command",
            "command": [PYTHON, "hello.py"],
            "workdir": str(project),
            "device": "cpu",
            "target": "ray",
            "ray_address": ray_cluster.address,
            "storage_path": str(tmp_path / "storage"),
            "env": {"PYTHONPATH": str(ROOT)},
        }
    )
    run = submit_when_free(spec)
    assert wait_done(run, 180) == "succeeded"
    data = json.loads(record.cluster_path(run).read_text())
    with urllib.request.urlopen(f"{ray_cluster.address}/api/version", timeout=10) as reply:
        here = json.loads(reply.read())["session_name"]  # the dashboard's own answer
    assert here.startswith("session_") and data.get("session") == here  # recorded at submit
    status = run.status()
    assert status is not None and status.supervisor is not None
    wait(lambda: not status.supervisor.alive(), 30, "the supervisor to exit")  # type: ignore[union-attr]
    lost = status.with_(state="running", ended=None)  # its supervisor died before it saw the end
    run.write_status(lost)
    cluster.Jobs(data["address"]).sdk().delete_job(data["submission_id"])  # the cluster forgets the job

    record.cluster_path(run).write_text(json.dumps({**data, "session": "session_2026-11-30_09-00-00_0_1"}))
    presence = ray_target.TARGET.presence(run, lost)  # as if submitted to another cluster
    assert presence.where == "unknown", presence
    assert f"now answers for another Ray cluster (session {here}" in presence.reason
    with pytest.raises(control.JobControlError, match="may still run"):
        control.resume(run)  # no second copy

    record.cluster_path(run).write_text(json.dumps(data))  # the cluster it was submitted to
    presence = ray_target.TARGET.presence(run, lost)
    assert presence.where == "ended" and "is not known to the cluster" in presence.reason

    record.cluster_path(run).write_text(json.dumps({**data, "session": "session_2026-11-30_09-00-00_0_1"}))
    said = control.kill(run)
    assert said.startswith("recorded as ended, not verified: ") and "ray job stop" in said
    final = run.status()
    assert final is not None and final.state == "cancelled" and final.attempt == 1
