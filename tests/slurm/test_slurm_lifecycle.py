"""The Slurm life cycle, hardened (issue 26), on the real two-node loopback cluster: a spec cannot
pick another cluster (item 8), a job only a stale accounting record calls running is unknown for a
bounded time and `k` records its end (item 9), a requeue of a wrapped command continues from its
newest complete checkpoint as the log says (item 11), a lost attempt whose job completed has its end
recorded (item 12), and `k` without a supervisor cancels a suspended job at once (item 14).

The jobs are a small bash script (`args.sh`) that prints its arguments and waits for a `go` file,
so each test decides when its job ends."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import control, runfolder, supervisor
from gaudi_tui.core.jobs.runfolder import COMPLETE_MARKER, RunFolder
from gaudi_tui.core.jobs.spec import JobSpec, from_mapping
from gaudi_tui.core.jobs.status import ProcRef, effective_state
from gaudi_tui.core.jobs.targets import slurm as slurm_target
from gaudi_tui.core.jobs.targets.slurm import record as slurm_record
from gaudi_tui.core.jobs.targets.slurm.states import STALE_ENV
from tests.jobs.conftest import log_tail, wait_done, wait_for
from tests.slurm.cluster import SlurmTestCluster
from tests.slurm.test_slurm_jobs import CPU

ARGS_SH = """#!/bin/bash
echo "args: $*"
while [ ! -e go ]; do sleep 0.2; done
echo "done"
"""

STALE_SACCT = """#!/bin/bash
# sacct as 22.05 prints `-n -P --format=JobID,JobName,State,ExitCode,Start,End,NodeList,AllocTRES`
# (tests/data/slurm/sacct_dbd_plain.txt), for a job whose end never reached slurmdbd: still RUNNING.
while [ $# -gt 0 ]; do
  if [ "$1" = "-j" ]; then
    echo "$2|gaudi-tui-stale-a1|RUNNING|0:0|2026-12-01T08:13:05|Unknown|n1|billing=1,cpu=1,node=1"
    shift
  fi
  shift
done
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "args.sh").write_text(ARGS_SH)
    return folder


def args_spec(project: Path, **changes: object) -> JobSpec:
    values: dict[str, object] = {
        "kind": "command",
        "command": ["bash", "args.sh", "--output_dir", "out"],
        "command_launcher": "direct",
        "workdir": str(project),
        "device": "cpu",
        "target": "slurm",
        "slurm_nodes": 1,
        "slurm_cards_per_node": 1,
        "kill_grace_s": 2.0,
    }
    values.update(changes)
    return from_mapping(values)


def record(run: RunFolder) -> slurm_record.SlurmRecord:
    return slurm_record.read(run) or slurm_record.SlurmRecord(attempt=0, job_name="", script="")


def log(run: RunFolder) -> str:
    try:
        return run.log_path.read_text(errors="replace")
    except OSError:  # not written yet
        return ""


def started(run: RunFolder, count: int = 1) -> None:
    """The job's command has printed its arguments `count` times (it runs)."""
    wait_for(
        lambda: log(run).count("args: ") >= count,
        60,
        f"the command to start ({count})\n{log_tail(run)}",
        poll=0.3,
    )


def kill_supervisor(run: RunFolder) -> None:
    ref = run.status().supervisor  # type: ignore[union-attr]
    assert ref is not None
    os.kill(ref.pid, signal.SIGKILL)
    wait_for(lambda: not ref.alive(), 10, "the supervisor to die")


def slurm_state(slurm: SlurmTestCluster, job_id: int | None) -> str:
    return slurm.run("scontrol", "show", "job", "-o", str(job_id)).stdout.split("JobState=")[1].split()[0]


def test_a_spec_cannot_send_its_job_to_another_cluster(slurm: SlurmTestCluster, project: Path) -> None:
    spec = args_spec(project, env={"SLURM_CONF": "/elsewhere/slurm.conf", "SBATCH_OUTPUT": "/tmp/x"})
    _, problems = control.check(spec, CPU)
    assert [p.field for p in problems] == ["env", "env"], problems
    said = " | ".join(p.message for p in problems)
    assert "SLURM_CONF in the job's env would send the job to another cluster" in said
    assert "set SLURM_CONF in the panel's environment instead" in said
    assert "SBATCH_OUTPUT: Slurm reads it as an option of sbatch or srun" in said
    assert control.check(args_spec(project), CPU)[1] == []


def test_a_lost_attempt_whose_job_completed_has_its_end_recorded(
    slurm: SlurmTestCluster, project: Path
) -> None:
    run = control.submit(args_spec(project), CPU)
    started(run)
    kill_supervisor(run)
    (project / "go").touch()
    job_id = record(run).job_id
    wait_for(lambda: slurm_state(slurm, job_id) == "COMPLETED", 30, "the job to complete")
    assert effective_state(run.status(), time.time()) == "lost"  # type: ignore[arg-type]
    wait_for(  # the shared queue snapshot the dead supervisor left may be up to 2 s old
        lambda: slurm_target.TARGET.presence(run, run.status()).where == "ended",  # type: ignore[arg-type]
        10,
        "a snapshot with the job's end",
    )
    said = control.resume(run)
    assert said == f"re-attached: Slurm job {job_id} ended COMPLETED", said
    assert wait_done(run, 30) == "succeeded", log_tail(run)
    assert run.status().attempt == 1  # type: ignore[union-attr]  # not run again
    assert not (run.path / "slurm" / "attempt-2.sbatch").exists()


def test_k_without_a_supervisor_cancels_a_suspended_job_at_once(
    slurm: SlurmTestCluster, project: Path
) -> None:
    """A signal to a job without running steps blocks 22.05's scancel ~95 s (seen here for a
    suspended job): k goes straight to the plain scancel."""
    run = control.submit(args_spec(project), CPU)
    started(run)
    kill_supervisor(run)
    job_id = record(run).job_id
    slurm.run("scontrol", "suspend", str(job_id))
    wait_for(lambda: slurm_state(slurm, job_id) == "SUSPENDED", 10, "the job to be suspended")
    begun = time.monotonic()
    said = control.kill(run)
    assert time.monotonic() - begun < 30, said
    assert said == f"killed (Slurm job {job_id} CANCELLED)"
    assert run.status().state == "cancelled"  # type: ignore[union-attr]


def test_a_requeued_wrapped_command_continues_from_its_newest_complete_checkpoint(
    slurm: SlurmTestCluster, project: Path
) -> None:
    checkpoint = project / "out" / "checkpoint-3"
    checkpoint.mkdir(parents=True)
    for name in ("model.safetensors", "trainer_state.json", COMPLETE_MARKER):
        (checkpoint / name).write_text("{}")
    (project / "out" / "checkpoint-5").mkdir()  # being written when the node failed: no marker
    (project / "out" / "checkpoint-5" / "trainer_state.json").write_text("{}")
    run = control.submit(args_spec(project, output_dir="out", wrap_trainer=True), CPU)
    started(run)
    assert "--resume_from_checkpoint" not in run.log_path.read_text()
    job_id = record(run).job_id
    slurm.run("scontrol", "requeue", str(job_id))  # what Slurm does when a node of the job fails
    wait_for(lambda: record(run).restarts >= 1, 30, "the supervisor to see the requeue")
    assert f"Slurm requeued job {job_id} (restart 1" in run.log_path.read_text()
    assert f"its ranks continue from {checkpoint}" in run.log_path.read_text()
    slurm.start_requeued_now(job_id, record(run).nodes)
    started(run, count=2)
    rerun = run.log_path.read_text().rsplit("args: ", 1)[1].splitlines()[0]
    assert rerun == f"--output_dir out --resume_from_checkpoint {checkpoint}"
    (project / "go").touch()
    assert wait_done(run, 60) == "succeeded", log_tail(run)
    assert run.status().attempt == 1  # type: ignore[union-attr]


def stale_run(slurm: SlurmTestCluster, project: Path) -> RunFolder:
    """A lost attempt whose Slurm job the controller no longer knows (this cluster never had job
    99999) while accounting still says RUNNING."""
    prepared, problems = control.check(args_spec(project), CPU)
    assert problems == []
    run = runfolder.create(prepared, accelerator="slurm:cpu")
    rec = slurm_record.SlurmRecord(
        attempt=1,
        job_name="gaudi-tui-stale-a1",
        script="",
        job_id=99999,
        conf=str(slurm.conf),
        state="RUNNING",
    )
    slurm_record.write(run, rec)
    status = run.status()
    assert status is not None
    run.write_status(status.with_(state="running", started=time.time(), supervisor=ProcRef(1, 0.0)))
    return run


def attach(run: RunFolder, **env: str) -> ProcRef:
    pid = supervisor.start(run, env={**os.environ, **env}, attach=True)
    ref = ProcRef.of(pid)
    assert ref is not None
    run.write_status(run.status().with_(supervisor=ref))  # type: ignore[union-attr]  # as r does
    return ref


def test_a_job_only_stale_accounting_calls_running_is_unknown_and_k_records_its_end(
    slurm: SlurmTestCluster, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fakes = tmp_path / "bin"
    fakes.mkdir()
    (fakes / "sacct").write_text(STALE_SACCT)
    (fakes / "sacct").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fakes}{os.pathsep}{os.environ['PATH']}")
    run = stale_run(slurm, project)
    presence = slurm_target.TARGET.presence(run, run.status())  # type: ignore[arg-type]
    assert presence.where == "unknown" and "a stale record" in presence.reason, presence
    with pytest.raises(control.JobControlError, match="may still run"):
        control.resume(run)

    first = attach(run, **{STALE_ENV: "2"})  # the supervisor waits a bounded time, then leaves it
    wait_for(lambda: not first.alive(), 30, "the supervisor to leave the job\n" + log_tail(run))
    status = run.status()
    assert status is not None and effective_state(status, time.time()) == "lost"
    assert "its end is unknown. k records it as ended" in (status.error or "")
    said = control.kill(run)
    assert said == "ended: Slurm's controller no longer knows job 99999, so nothing was left to cancel"
    assert run.status().state == "cancelled"  # type: ignore[union-attr]

    again = stale_run(slurm, project)
    watching = attach(again)  # within its bound: it waits, and a kill ends the wait
    wait_for(lambda: "a stale record? waiting" in log(again), 30, "the supervisor's note")
    assert control.kill(again).startswith("killing")
    assert wait_done(again, 30) == "cancelled"
    assert not watching.alive() or wait_for(lambda: not watching.alive(), 10, "the supervisor to end")
