"""Slurm jobs of the panel on the real two-node loopback cluster: a 2-node demo fine-tune (loss
falls, each rank sees its cards), graceful stop at one step and resume, a pending job with its
reason cancelled at once, requests that can never run refused, a supervisor SIGKILLed and
re-attached, the controller restarted mid-job, a node killed."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.jobs import control, runfolder
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.targets import slurm as slurm_target
from gaudi_tui.core.jobs.targets.slurm import record as slurm_record
from gaudi_tui.core.jobs.targets.slurm import script
from gaudi_tui.core.jobs.validate import InvalidSpec
from gaudi_tui.core.jobs.worker import slurm_rank
from tests.conftest import ROOT
from tests.jobs.conftest import events, log_tail, wait_done, wait_for
from tests.slurm.cluster import SlurmTestCluster

CPU = Accelerator("cpu", "test")


def slurm_spec(**changes: object) -> JobSpec:
    """The demo fine-tune, small for 2 shared cores: one rank (one card) on each of 2 nodes."""
    base: dict[str, object] = {
        "max_seq_len": 64,
        "batch_size": 8,
        "max_steps": 30,
        "warmup_steps": 2,
        "logging_steps": 1,
        "device": "cpu",
        "target": "slurm",
        "slurm_nodes": 2,
        "slurm_cards_per_node": 1,
        "env": {"PYTHONPATH": str(ROOT)},
    }
    base.update(changes)
    return JobSpec(**base)  # type: ignore[arg-type]


def record(run: RunFolder) -> slurm_record.SlurmRecord:
    """slurm.json, or an empty record until the supervisor has written it."""
    return slurm_record.read(run) or slurm_record.SlurmRecord(attempt=0, job_name="", script="")


def running(run: RunFolder, steps: int = 1) -> None:
    def ok() -> bool:
        status = run.status()
        return status is not None and status.state == "running" and len(events(run, "log")) >= steps

    try:
        wait_for(ok, 90, f"{run.id} to run {steps} step(s)", poll=0.3)
    except AssertionError:
        raise AssertionError(f"{run.id} never ran; log:\n{log_tail(run)}") from None


def test_two_node_fine_tune_stops_gracefully_and_resumes(slurm: SlurmTestCluster) -> None:
    run = control.submit(slurm_spec(max_steps=14), CPU)
    running(run, steps=3)
    rec = record(run)
    assert rec.job_id is not None and rec.nodes == ["n1", "n2"]
    ranks = wait_for(lambda: len(record(run).ranks) == 2 and record(run).ranks, 30, "both rank lines")
    assert {r: ranks[r]["node"] for r in ranks} == {"0": "n1", "1": "n2"}  # type: ignore[index]
    for info in ranks.values():  # type: ignore[union-attr]
        assert len(info["cards"]) == 1  # the card Slurm allocated on that node
        assert info["habana_visible_modules"] == ",".join(str(c) for c in info["cards"])
    # both ends agree: every rank met at the first node on the port derived from the job id
    masters = {info["master"] for info in ranks.values()}  # type: ignore[union-attr]
    assert masters == {f"127.0.0.1:{slurm_rank.master_port(rec.job_id)}"}
    assert events(run, "begin")[0]["world_size"] == 2
    assert (run.path / "slurm" / "attempt-1.sbatch").exists()
    assert slurm_target.TARGET.where(run) == f"Slurm job {rec.job_id} on n1,n2: running"
    details = slurm_target.TARGET.details(run)
    assert "rank 0: node n1 cards" in details and "rank 1: node n2 cards" in details
    assert f"rendezvous (MASTER_ADDR:MASTER_PORT, from the job id): {masters.pop()}" in details

    control.stop(run)
    assert wait_done(run, 90) == "stopped"
    end = events(run, "end")[-1]
    assert end["stopped"] is True and run.newest_complete_checkpoint() is not None
    stopped_at = int(end["step"])
    assert control.resume(run).startswith("resuming from checkpoint-")
    assert wait_done(run, 300) == "succeeded", log_tail(run)
    assert run.status().attempt == 2  # type: ignore[union-attr]
    begins = events(run, "begin")
    assert len(begins) == 2 and int(events(run, "log")[-1]["step"]) == 14
    assert int([e for e in events(run, "log") if e["step"] > stopped_at][0]["step"]) == stopped_at + 1
    losses = [e["loss"] for e in events(run, "log") if "loss" in e]
    assert losses[-1] < losses[0]
    assert (run.path / "slurm" / "attempt-2.sbatch").exists()


def test_pending_job_says_why_and_a_stop_cancels_it_at_once(slurm: SlurmTestCluster) -> None:
    blocker = slurm.sbatch("-J", "hog", "-N2", "--gres=gpu:8", "--wrap", "sleep 300")
    wait_for(
        lambda: "RUNNING" in (slurm.run("squeue", "-h", "-j", str(blocker), "-o", "%T").stdout), 20, "the hog"
    )
    run = control.submit(slurm_spec(slurm_nodes=1), CPU)
    rec = wait_for(
        lambda: record(run).state == "PENDING" and "free card" in record(run).words and record(run),
        30,
        "a reason",
    )
    assert rec.words == "pending: waiting for 1 free card on partition main"  # type: ignore[union-attr]
    assert run.status().state == "queued"  # type: ignore[union-attr]
    presence = slurm_target.TARGET.presence(run, run.status())  # type: ignore[arg-type]
    assert presence.where == "running" and "waiting for 1 free card" in presence.reason
    elsewhere = slurm_target.TARGET
    with pytest.MonkeyPatch.context() as mp:  # a panel that reaches another cluster cannot say "ended"
        mp.setenv("SLURM_CONF", str(slurm.root / "other.conf"))
        other = elsewhere.presence(run, run.status())  # type: ignore[arg-type]
        assert other.where == "unknown" and "was submitted to the cluster of SLURM_CONF=" in other.reason
    started = time.monotonic()
    control.stop(run)
    assert wait_done(run, 30) == "stopped"
    assert time.monotonic() - started < 15  # no 95 s wait for a signal to a pending job
    assert "cancelled at once" in run.log_path.read_text()


def test_kill_signals_the_ranks_then_cancels(slurm: SlurmTestCluster) -> None:
    run = control.submit(slurm_spec(slurm_nodes=1, max_steps=400, kill_grace_s=3.0), CPU)
    wait_for(lambda: record(run).state == "RUNNING" and record(run).ranks, 60, "the rank to start")
    assert control.kill(run).startswith("killing")
    assert wait_done(run, 60) == "cancelled"
    assert (run.status().error or "").startswith("killed (Slurm job")  # type: ignore[union-attr]
    log = run.log_path.read_text()
    assert "SIGTERM sent to the ranks" in log
    job = slurm.run("scontrol", "show", "job", "-o", str(record(run).job_id)).stdout
    assert "JobState=RUNNING" not in job and "JobState=PENDING" not in job


def test_requests_that_can_never_run_are_refused_before_queueing(slurm: SlurmTestCluster) -> None:
    before = len(runfolder.all_runs())
    cases = {
        "slurm_nodes": slurm_spec(slurm_nodes=3),
        "slurm_cards_per_node": slurm_spec(slurm_nodes=1, slurm_cards_per_node=9),
        "slurm_partition": slurm_spec(slurm_partition="bigmem"),
        "slurm_gres": slurm_spec(slurm_gres="hpu"),
    }
    said = {}
    for field, spec in cases.items():
        with pytest.raises(InvalidSpec) as caught:
            control.submit(spec, CPU)
        assert [p.field for p in caught.value.problems] == [field], caught.value.problems
        said[field] = str(caught.value)
    assert "can never run: 3 node(s)" in said["slurm_nodes"], said
    assert "can never run: 1 node(s) with 9 cards each" in said["slurm_cards_per_node"], said
    assert "bigmem" in said["slurm_partition"] and "GRES 'hpu'" in said["slurm_gres"], said
    with pytest.raises(InvalidSpec) as hpu:
        control.submit(slurm_spec(device="hpu", slurm_nodes=2, slurm_cards_per_node=4), CPU)
    assert "whole hosts" in str(hpu.value)
    assert len(runfolder.all_runs()) == before  # nothing created, nothing queued
    queued = slurm.run("squeue", "-h", "-o", "%j").stdout
    assert "gaudi-tui" not in queued


@pytest.mark.slow
def test_a_killed_supervisor_reattaches_and_the_job_ends_as_slurm_says(slurm: SlurmTestCluster) -> None:
    run = control.submit(slurm_spec(slurm_nodes=1, max_steps=36), CPU)
    running(run, steps=2)
    first = run.status().supervisor  # type: ignore[union-attr]
    assert first is not None
    os.kill(first.pid, signal.SIGKILL)
    wait_for(lambda: not first.alive(), 10, "the supervisor to die")
    said = control.resume(run)
    assert said.startswith("re-attached: Slurm job"), said
    wait_for(lambda: "re-attached" in run.log_path.read_text(), 20, "the new supervisor")
    assert wait_done(run, 300) == "succeeded", log_tail(run)
    assert int(events(run, "log")[-1]["step"]) == 36


@pytest.mark.slow
def test_a_restarted_controller_is_unknown_meanwhile_then_followed(slurm: SlurmTestCluster) -> None:
    run = control.submit(slurm_spec(slurm_nodes=1, max_steps=36), CPU)
    running(run, steps=2)
    slurm.kill_daemon("slurmctld", signal.SIGTERM)  # saves its state and exits
    try:
        # the shared snapshot may be up to 2 s old: the next one says the controller is gone
        presence = wait_for(
            lambda: (p := slurm_target.TARGET.presence(run, run.status())).where == "unknown" and p,
            30,
            "unknown",
        )  # type: ignore[arg-type]
        assert "did not answer" in presence.reason  # type: ignore[union-attr]
        wait_for(lambda: "state is unknown" in run.log_path.read_text(), 30, "the supervisor to notice")
        assert run.status().state == "running"  # type: ignore[union-attr]
    finally:
        slurm.start_controller()
    assert wait_done(run, 300) == "succeeded", log_tail(run)
    assert "answers again" in run.log_path.read_text()
    assert int(events(run, "log")[-1]["step"]) == 36


@pytest.mark.slow
def test_a_killed_node_is_followed_as_slurm_decides(slurm: SlurmTestCluster) -> None:
    # Slurm takes 25-35 s here to declare n2 down while both ranks train on (slurmstepd outlives
    # slurmd), so the job has no step bound in reach: 400 steps sometimes ended first. It is killed below.
    run = control.submit(slurm_spec(max_steps=100_000), CPU)
    running(run, steps=2)
    slurm.kill_daemon("slurmd-n2")  # kill -9 of the node's slurmd, the one this cluster started
    try:
        # Slurm declares n2 down after SlurmdTimeout and requeues the batch job (its default): the
        # requeued job is COMPLETING while its steps are cleaned up, then PENDING (n2 stays down)
        after: list[str] = []

        def requeued() -> bool:
            rec = record(run)
            if rec.restarts >= 1:
                after.append(rec.state)
            return rec.restarts >= 1 and rec.state == "PENDING"

        wait_for(requeued, 120, "Slurm to requeue the job and the panel to see it PENDING")
        assert set(after) <= {"COMPLETING", "PENDING"}, after
        assert run.status().attempt == 1  # type: ignore[union-attr]  # followed, not a new attempt
        assert "Slurm requeued job" in run.log_path.read_text()
    finally:
        slurm.start_node("n2")
    said = control.kill(run)
    assert said.startswith("killing")
    assert wait_done(run, 60) == "cancelled"
    assert "killed (Slurm job" in (run.status().error or "")  # type: ignore[union-attr]


@pytest.mark.slow
def test_the_time_limit_warning_becomes_a_graceful_stop(slurm: SlurmTestCluster, tmp_path: Path) -> None:
    """The batch script of a job with a time limit: Slurm's USR1 (`--signal=B:USR1@120`) reaches
    the batch shell while srun runs, and the trap writes the STOP file the ranks read."""
    run = RunFolder(tmp_path / "run")
    run.path.mkdir()
    spec = slurm_spec(slurm_nodes=1, slurm_time_limit="1")
    path = script.script_path(run, 1)
    path.parent.mkdir()
    path.write_text(script.render(spec, run, 1, ["sleep", "300"]))
    job_id = int(slurm.run("sbatch", "--parsable", *script.options(spec, run, 1), str(path)).stdout.strip())
    wait_for(run.stop_path.exists, 90, "the STOP file", poll=0.5)
    out = (run.path / "slurm" / f"job-{job_id}.out").read_text()
    assert "the time limit is near: graceful stop" in out
    state = slurm.run("scontrol", "show", "job", "-o", str(job_id)).stdout
    assert "JobState=RUNNING" in state  # srun and its task kept running: only the batch shell was told
