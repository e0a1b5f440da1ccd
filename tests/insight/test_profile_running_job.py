"""A profile taken from a running Trainer command job (a real CPU run through the panel's wrapper,
no restart): `gaudi-tui jobs profile ID --steps 5` writes the request, the job's callback records 5
steps with torch.profiler and leaves a whole Chrome trace in the run folder, and `jobs insight`
lists its top aten:: ops; a second request while one is pending is refused with the reason."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.insight import profile
from gaudi_tui.core.jobs import control, runfolder
from gaudi_tui.core.jobs.insight import text
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec, from_mapping
from gaudi_tui.core.jobs.status import JobStatus, ProcRef
from tests.conftest import CPU, PYTHON, child_env
from tests.insight.test_why_slow_trainer import SCRIPT, insight_of
from tests.jobs.conftest import events, log_tail, no_stray_processes, wait_done, wait_for  # noqa: F401

STEPS = 400


def start(
    tmp_path: Path, steps: int = STEPS, ask: int | None = None, extra: tuple[str, ...] = ()
) -> RunFolder:
    """The script as a command job (`extra`: its other arguments); `ask`: a profile of that many
    steps requested before it starts."""
    project = tmp_path / "project"
    project.mkdir(parents=True)
    (project / "slow.py").write_text(SCRIPT, encoding="utf-8")
    from gaudi_tui.core.demo import model_dir

    spec = from_mapping({
        "kind": "command", "workdir": str(project), "device": "cpu",
        "command": [PYTHON, "slow.py", "--model", str(model_dir()), "--max_steps", str(steps), *extra],
    })  # fmt: skip
    run = control.submit(spec, CPU, env=child_env())
    if ask is not None:
        assert profile.request(run.path, ask) is None
    return run


@pytest.mark.slow
def test_a_running_trainer_profiled_for_5_steps_leaves_a_trace_and_its_top_ops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = start(tmp_path)
    wait_for(lambda: events(run, "log"), 120, "the job's first log")  # it is training now
    assert main(["jobs", "profile", run.id, "--steps", "5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["asked"] is True
    assert main(["jobs", "profile", run.id, "--steps", "5"]) == 1  # one at a time
    assert "refused: a profile" in capsys.readouterr().err
    (taken,) = wait_for(lambda: events(run, "profile"), 120, "the profile event")  # type: ignore[misc]
    control.stop(run)
    assert wait_done(run, 120) in ("succeeded", "stopped"), log_tail(run)

    assert taken["what"] == "taken" and taken["steps"] == 5, taken
    assert taken["step"] - taken["first_step"] == 4
    trace = Path(taken["trace"])
    assert trace.parent == run.path and json.loads(trace.read_text(encoding="utf-8"))["traceEvents"]
    assert not list(run.path.glob(".profile-*")) and not (run.path / profile.TAKING).exists()
    assert taken["top_ops"][0]["self_host_us"] > 0
    lines = "\n".join(text.lines(insight_of(run)))
    assert f"profile of steps {taken['first_step']}–{taken['step']} (CPU)" in lines
    assert "top ops by self time: aten::" in lines
    assert "device none recorded (a CPU run" in lines


def test_a_profile_is_refused_while_one_is_taken(tmp_path: Path) -> None:
    (tmp_path / profile.TAKING).write_text('{"steps": 5}\n', encoding="utf-8")
    assert profile.request(tmp_path, 5) == "a profile is being taken now (5 steps): wait for it to end"
    (tmp_path / profile.TAKING).unlink()
    assert profile.request(tmp_path, 0) == f"--steps must be 1 to {profile.MAX_STEPS}"
    assert profile.request(tmp_path, 3) is None
    assert json.loads((tmp_path / profile.REQUEST).read_text(encoding="utf-8"))["steps"] == 3


@pytest.mark.slow
def test_a_job_that_ends_inside_the_window_leaves_no_trace(tmp_path: Path) -> None:
    """Asked before it starts for more steps than it has left: the callback begins at step 1's end,
    the run ends at step 12, and the window is dropped whole."""
    run = start(tmp_path, steps=12, ask=50)
    assert wait_done(run, 120) == "succeeded", log_tail(run)
    (dropped,) = events(run, "profile")
    assert dropped["what"] == "abandoned" and "no trace written" in dropped["reason"]
    assert not list(run.path.glob("profile-*")) and not list(run.path.glob(".profile-*"))
    assert not (run.path / profile.TAKING).exists()


def test_the_profiler_records_the_device_each_accelerator_has() -> None:
    """On Gaudi, Intel's profiling workflow records device activity with ProfilerActivity.HPU
    (https://docs.habana.ai/en/latest/Profiling/Profiling_Workflow.html); torch 2.13 lists it."""
    from torch.profiler import ProfilerActivity

    assert profile.activities("cpu") == [ProfilerActivity.CPU]
    assert profile.activities("cuda") == [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    assert profile.activities("hpu") == [ProfilerActivity.CPU, ProfilerActivity.HPU]


def test_the_command_refuses_a_job_not_running_a_server_and_a_second_request(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The refusals `gaudi-tui jobs profile` and Training's `P` share (core/jobs/profile_ask.py)."""
    alive = JobStatus(state="running", started=time.time(), supervisor=ProcRef.of(os.getpid()))
    ended = runfolder.create(JobSpec(name="trained", max_steps=20), "cpu")
    ended.write_status(JobStatus(state="succeeded", started=time.time() - 60, ended=time.time()))
    server = runfolder.create(JobSpec(name="serve", kind="serve", max_steps=0), "cpu")
    server.write_status(alive)
    training = runfolder.create(JobSpec(name="training", max_steps=20), "cpu")
    training.write_status(alive)

    def asked(run: RunFolder, code: int) -> str | None:
        assert main(["jobs", "profile", run.id, "--json"]) == code
        return json.loads(capsys.readouterr().out)["refused"]

    assert asked(ended, 1) == "the job is not running"
    assert asked(server, 1).startswith("a serve job has no training steps to record")  # type: ignore[union-attr]
    assert asked(training, 0) is None
    assert asked(training, 1) == "a profile was asked for and the job has not begun it yet (5 steps)"
    assert not (ended.path / profile.REQUEST).exists() and not (server.path / profile.REQUEST).exists()
