"""Never two copies of one job: resume refuses while a recorded process still runs, and two
resumes at once cannot both start (a lock on the run folder)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
import time

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.jobs import control, runfolder
from gaudi_tui.core.jobs.status import ProcRef
from tests.conftest import PYTHON
from tests.jobs.conftest import replay


def test_a_lost_job_whose_worker_still_runs_is_not_resumed(capsys: pytest.CaptureFixture[str]) -> None:
    run = replay()
    worker = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(60)"])
    try:
        ref = ProcRef.of(worker.pid)
        assert ref is not None
        status = run.status()
        assert status is not None
        # The supervisor died (its PID names nothing now) but a worker it recorded runs on.
        run.write_status(status.with_(state="running", supervisor=ProcRef(1, 0.0), workers=(ref,)))
        assert main(["jobs", "resume", run.id]) == 1
        err = capsys.readouterr().err
        assert "is lost but its processes still run" in err and f"PID {worker.pid}" in err
        assert f"gaudi-tui jobs stop --force {run.id}" in err
        assert worker.poll() is None  # refused, nothing was touched
        assert run.status().state == "running"  # type: ignore[union-attr]
    finally:
        worker.kill()
        worker.wait(5)


def test_a_second_resume_while_one_is_starting_is_refused() -> None:
    run = replay()
    fd = os.open(run.path / control.RESUME_LOCK, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another resume holds the run folder
        with pytest.raises(control.JobControlError, match="being resumed by another command"):
            control.resume(run)
    finally:
        os.close(fd)


def test_a_ray_job_takes_the_same_resume_lock() -> None:
    run = replay(recorded="ray-runs")
    assert run.spec().target == "ray"
    fd = os.open(run.path / control.RESUME_LOCK, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(control.JobControlError, match="being resumed by another command"):
            control.resume(run)  # refused before the cluster is asked anything
    finally:
        os.close(fd)
    with pytest.raises(control.JobControlError, match="already finished"):  # the lock is free again
        control.resume(run)


def test_the_processes_of_a_job_that_just_ended_get_time_to_exit() -> None:
    run = replay()
    exiting = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(1.5)"])  # a supervisor finishing up
    try:
        ref = ProcRef.of(exiting.pid)
        status = run.status()
        assert ref is not None and status is not None
        run.write_status(
            status.with_(state="cancelled", ended=time.time(), supervisor=ref, launcher=None, workers=())
        )
        shutil.rmtree(run.path / "checkpoints", ignore_errors=True)
        # Not refused for a stray process: it waited for the supervisor to go, then found no checkpoint.
        with pytest.raises(control.JobControlError, match="no complete checkpoint"):
            control.resume(run)
        assert exiting.poll() is not None
    finally:
        exiting.kill()
        exiting.wait(5)


def test_a_kill_without_a_supervisor_never_overwrites_a_resume_made_meanwhile() -> None:
    """The kill records its outcome after re-reading status.json under the run folder's lock: a
    resume that ran while the kill waited out the grace period is kept, not overwritten."""
    run = replay()
    launcher = [PYTHON, "-c", "import time; time.sleep(60)"]
    worker = subprocess.Popen(launcher, start_new_session=True)  # a launcher leads its own group
    try:
        ref = ProcRef.of(worker.pid)
        status = run.status()
        assert ref is not None and status is not None
        run.write_status(status.with_(state="running", supervisor=ProcRef(1, 0.0), launcher=ref, workers=()))
        fd = os.open(run.path / control.RESUME_LOCK, os.O_WRONLY | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)  # a resume holds the run folder
        said: list[str] = []
        killer = threading.Thread(target=lambda: said.append(control.kill(run)))
        killer.start()
        worker.wait(10)  # the kill ended the job's process and now waits for the lock
        resumed = status.with_(
            state="queued", attempt=status.attempt + 1, supervisor=None, queued=time.time()
        )
        run.write_status(resumed)  # what the resume wrote
        os.close(fd)
        killer.join(15)
        assert said == ["killed (no supervisor)"]
        assert run.status() == resumed
    finally:
        worker.kill()
        worker.wait(5)


def test_a_resume_that_cannot_write_the_run_folder_says_why() -> None:
    run = replay()
    checkpoint = run.checkpoints_dir / "checkpoint-5"
    checkpoint.mkdir(parents=True)
    for name in ("model.safetensors", "trainer_state.json", runfolder.COMPLETE_MARKER):
        (checkpoint / name).write_text("{}")
    status = run.status()
    assert status is not None and run.newest_complete_checkpoint() == checkpoint
    run.write_status(status.with_(state="cancelled"))  # stopped with a checkpoint: resumable
    run.stop_path.mkdir()  # STOP cannot be removed: what a read-only or broken folder gives
    with pytest.raises(control.JobControlError, match=f"cannot resume {run.id}: .*Is a directory"):
        control.resume(run)
