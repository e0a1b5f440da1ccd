"""How a Ray job's end is told: the cause of a failure (Ray's wrapped exceptions unwrapped), sources
checked where the job runs, and an end that no supervisor saw. Runs after test_ray_jobs.py (whose
last test kills the second node): these jobs need only the head."""

from __future__ import annotations

import os
import signal

import pytest

from gaudi_tui.core.doctor.knowledge import explain
from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.targets.ray import cluster
from tests.ray.cluster import RayTestCluster
from tests.ray.test_ray_jobs import ray_spec, state_of, submit_when_free, wait, wait_done

pytestmark = pytest.mark.slow


def test_a_failure_names_its_cause_not_rays_wrapper(ray_cluster: RayTestCluster) -> None:
    """The head advertises HPUs, but this machine has no Intel torch: Ray reports a ControllerError
    whose cause is further down the log."""
    run = submit_when_free(ray_spec(ray_cluster, device="hpu", workers=1, max_steps=5))
    assert wait_done(run, 180) == "failed"
    status = run.status()
    assert status is not None and status.error is not None
    assert "torch hpu is not available" in status.error, status.error
    assert not status.error.startswith("ControllerError")
    assert [m.entry.id for m in explain(status.error)] == ["ray-hpu-without-torch-hpu"]


def test_sources_are_checked_where_the_job_runs(ray_cluster: RayTestCluster) -> None:
    run = submit_when_free(ray_spec(ray_cluster, workers=1, dataset="/nowhere/data.jsonl"))
    assert wait_done(run, 120) == "failed"
    status = run.status()
    assert status is not None and status.error is not None
    assert status.error.startswith("dataset: ") and "checked on the cluster's node" in status.error


def test_r_on_a_lost_job_that_succeeded_mirrors_its_end(ray_cluster: RayTestCluster) -> None:
    run = submit_when_free(ray_spec(ray_cluster, workers=1, max_steps=5))
    sid = f"gaudi-tui-{run.id}-a1"
    wait(lambda: cluster.job_state_at(ray_cluster.address, sid) == "RUNNING", 120, "the job to run", run)
    status = run.status()
    assert status is not None and status.supervisor is not None
    os.kill(status.supervisor.pid, signal.SIGKILL)
    wait(lambda: cluster.job_state_at(ray_cluster.address, sid) == "SUCCEEDED", 180, "the job to end", run)
    assert state_of(run) == "lost"
    said = control.resume(run)
    assert said == f"re-attached: Ray job {sid} ended SUCCEEDED on the cluster"
    assert wait_done(run, 60) == "succeeded"
    final = run.status()
    assert final is not None and final.attempt == 1  # not trained again
    with pytest.raises(control.JobControlError, match="already finished"):
        control.resume(run)
