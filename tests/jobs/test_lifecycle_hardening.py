"""The life cycle on this host, hardened (issue 26): a kill ends whatever `r` refuses for (item 7),
an attempt's outcome comes from its own events only (item 13), a process keeps its identity across
a step of the wall clock (item 16), and a checkpoint being rewritten is not complete (item 11)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from transformers import TrainerControl, TrainerState, TrainingArguments

from gaudi_tui.core.jobs import control, runfolder, supervisor, targets
from gaudi_tui.core.jobs.kinds import command
from gaudi_tui.core.jobs.runfolder import COMPLETE_MARKER
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus, ProcRef, start_ticks
from gaudi_tui.core.jobs.worker.callbacks import StopCallback
from tests.conftest import PYTHON
from tests.jobs.conftest import replay, wait_done

CLOCK_STEP_S = 30.0
"""How far psutil's create_time of a process moves when the wall clock is stepped by as much."""


@pytest.fixture
def sleeper() -> subprocess.Popen[bytes]:
    child = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(60)"], start_new_session=True)
    yield child
    child.kill()
    child.wait(5)


def test_k_ends_a_failed_job_that_r_says_still_runs(sleeper: subprocess.Popen[bytes]) -> None:
    """A job recorded as failed whose launcher still runs: `r` refuses and says to end it with a
    kill; the kill now does, and records it."""
    run = replay()
    ref = ProcRef.of(sleeper.pid)
    status = run.status()
    assert ref is not None and status is not None
    run.write_status(status.with_(state="failed", ended=time.time() - 60, supervisor=None, launcher=ref))
    with pytest.raises(control.JobControlError) as refused:
        control.resume(run)
    assert f"`gaudi-tui jobs stop --force {run.id}`" in str(refused.value)
    said = control.kill(run)
    assert said == "killed (no supervisor)"
    assert sleeper.wait(10) is not None
    final = run.status()
    assert final is not None and final.state == "cancelled" and final.kill_requested
    with pytest.raises(control.JobControlError, match="nothing to kill"):
        control.kill(run)  # nothing runs any more


def test_a_succeeded_attempt_is_not_read_from_the_stop_before_it(tmp_path: Path) -> None:
    """Attempt 1 was stopped (its `end` event says so); attempt 2 of the command prints no metric and
    exits 0: it succeeded, whatever attempt 1's end said."""
    spec = command.prepare(
        JobSpec(kind="command", command=[PYTHON, "-c", "print('done')"], workdir=str(tmp_path), device="cpu")
    )
    run = runfolder.create(spec, accelerator="cpu")
    first = [
        {"event": "begin", "time": 1.0, "step": 0, "max_steps": 10},
        {"event": "log", "time": 2.0, "step": 4, "loss": 1.0},
        {"event": "end", "time": 3.0, "step": 4, "max_steps": 10, "stopped": True},
    ]
    run.metrics_path.write_text("".join(json.dumps(e) + "\n" for e in first))
    status = run.status()
    assert status is not None
    run.write_status(status.with_(state="queued", attempt=2, started=1.0, ended=3.0, queued=time.time()))
    supervisor.start(run)
    assert wait_done(run, 60) == "succeeded"
    assert run.status().attempt == 2  # type: ignore[union-attr]


def test_a_process_keeps_its_identity_across_a_clock_step(sleeper: subprocess.Popen[bytes]) -> None:
    """status.json written before the wall clock was stepped: psutil's create_time of the same
    process now differs by the step; the boot-relative start recorded beside it does not."""
    ref = ProcRef.of(sleeper.pid)
    assert ref is not None and ref.ticks == start_ticks(sleeper.pid) and ref.ticks is not None
    run = replay()
    status = run.status()
    assert status is not None
    recorded = status.with_(state="running", supervisor=ProcRef(1, 0.0), workers=(ref,)).to_json()
    data = json.loads(recorded)
    data["workers"][0]["started"] -= CLOCK_STEP_S  # as the clock reads it after a step
    run.status_path.write_text(json.dumps(data))
    read = run.status()
    assert read is not None and read.workers[0].alive()
    presence = targets.get("local").presence(run, read)
    assert presence.where == "running" and f"PID {sleeper.pid}" in presence.reason
    with pytest.raises(control.JobControlError, match="its processes still run"):
        control.resume(run)  # no second copy


def test_old_status_files_compare_the_start_time_and_a_reused_pid_is_not_ours(
    sleeper: subprocess.Popen[bytes],
) -> None:
    ref = ProcRef.of(sleeper.pid)
    assert ref is not None and ref.ticks is not None
    old = JobStatus.from_dict({"workers": [{"pid": ref.pid, "started": ref.started}]})  # no ticks
    assert old.workers[0].ticks is None and old.workers[0].alive()
    assert not ProcRef(ref.pid, ref.started - CLOCK_STEP_S).alive()  # what it costs without ticks
    assert not ProcRef(ref.pid, ref.started, ticks=ref.ticks - 1).alive()  # another process, same PID


def test_a_checkpoint_trainer_rewrites_loses_its_old_completion_marker(tmp_path: Path) -> None:
    """A requeue reruns a command from its start: Trainer writes checkpoint-N again where the first
    run left one marked complete. The marker goes before the save, so the folder is never counted
    complete half rewritten; other steps' checkpoints keep theirs."""
    out = tmp_path / "out"
    for step in (2, 4):
        folder = out / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        for name in ("model.safetensors", "trainer_state.json", COMPLETE_MARKER):
            (folder / name).write_text("{}")
    args = TrainingArguments(output_dir=str(out), use_cpu=True, report_to=[])
    state = TrainerState(global_step=2, max_steps=10)
    callback = StopCallback(lambda: False)
    callback.on_step_end(args, state, TrainerControl(should_save=False))
    assert command.is_complete(out / "checkpoint-2")  # no save at this step: untouched
    callback.on_step_end(args, state, TrainerControl(should_save=True))
    assert not (out / "checkpoint-2" / COMPLETE_MARKER).exists()
    assert not command.is_complete(out / "checkpoint-2", marked=True)  # Trainer's old files do not count
    assert (out / "checkpoint-4" / COMPLETE_MARKER).exists()
    callback.on_epoch_end(args, TrainerState(global_step=4), TrainerControl(should_save=True))
    assert not (out / "checkpoint-4" / COMPLETE_MARKER).exists()
