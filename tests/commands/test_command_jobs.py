"""Users' own scripts as jobs, end to end on CPU: the scripts are written by the test as a user
writes them (none imports gaudi-tui) and run under the real detached supervisor."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gaudi_tui.core.demo import model_dir
from gaudi_tui.core.doctor.knowledge import explain, read_log_tail
from gaudi_tui.core.jobs import control, runfolder
from gaudi_tui.core.jobs.kinds import command
from gaudi_tui.core.jobs.monitor import Monitor
from gaudi_tui.core.jobs.spec import JobSpec, SpecError, from_mapping
from gaudi_tui.core.jobs.validate import InvalidSpec
from tests.conftest import CPU, PYTHON, child_env
from tests.jobs.conftest import events, log_tail, wait_done, wait_for

PRINTED = re.compile(r"\{'loss': '([^']+)'")


def spec_for(project: Path, words: list[str], **changes: object) -> JobSpec:
    values: dict[str, object] = {
        "kind": "command",
        "command": words,
        "workdir": str(project),
        "device": "cpu",
    }
    values.update(changes)
    return from_mapping(values)


def trainer_args(*extra: str) -> list[str]:
    return ["train.py", "--model_name_or_path", str(model_dir()), "--train_file", "train.txt",
            "--output_dir", "out", "--logging_steps", "2", *extra]  # fmt: skip


def submit(spec: JobSpec) -> runfolder.RunFolder:
    return control.submit(spec, CPU, env=child_env())


@pytest.mark.slow
def test_trainer_script_on_two_ranks_charts_stops_together_and_resumes(project: Path) -> None:
    """torchrun, 2 processes: the script's own losses at Trainer's steps; a graceful stop has both
    ranks at one step with one checkpoint; resume continues from it with the user's flag."""
    spec = spec_for(
        project, trainer_args("--max_steps", "400", "--step_sleep", "0.05"),
        command_launcher="torchrun", processes=2,
    )  # fmt: skip
    run = submit(spec)
    wait_for(lambda: len(events(run, "log")) >= 3, 150, "three logged steps\n" + log_tail(run))
    assert command.wrapper_active(run)
    assert "stops gracefully" in command.stop_mode(run, run.spec())
    control.stop(run)
    assert wait_done(run, 90) == "stopped", log_tail(run)
    log = run.log_path.read_text(errors="replace")
    stops = re.findall(r"\[gaudi-tui\] rank (\d) stopping at step (\d+)", log)
    assert sorted(r for r, _ in stops) == ["0", "1"] and len({s for _, s in stops}) == 1, stops
    step = int(stops[0][1])
    assert [p.name for p in (project / "out").iterdir()] == [f"checkpoint-{step}"]
    assert command.newest_checkpoint(run, run.spec()) == project / "out" / f"checkpoint-{step}"
    logs = events(run, "log")
    # every logging_steps=2, and once more at the stop step (the stop asks Trainer to log)
    steps = [e["step"] for e in logs]
    assert steps[-1] == step and [s for s in steps if s != step] == list(range(2, step, 2))
    # the charts' losses are the ones the script printed (Trainer 5.x prints 4 significant digits)
    assert [f"{e['loss']:.4g}" for e in logs] == PRINTED.findall(log)[: len(logs)]
    assert events(run, "begin")[0]["world_size"] == 2
    assert events(run, "end")[-1] == {**events(run, "end")[-1], "step": step, "stopped": True}

    assert control.resume(run, env=child_env()) == f"resuming from checkpoint-{step}"
    wait_for(lambda: len(events(run, "begin")) == 2 and events(run, "log")[-1]["step"] > step, 150,
             "the resumed attempt to log\n" + log_tail(run))  # fmt: skip
    assert events(run, "begin")[-1]["step"] == step
    assert f"--resume_from_checkpoint {project / 'out' / f'checkpoint-{step}'}" in " ".join(
        run.status().command
    )
    control.kill(run)
    assert wait_done(run, 60) == "cancelled"


def test_plain_torch_loop_printing_json_behaves_as_without_the_wrapper(project: Path) -> None:
    bare = subprocess.run(
        [PYTHON, "loop.py", "12"], cwd=project, capture_output=True, text=True, env=child_env()
    )
    run = submit(spec_for(project, [PYTHON, "loop.py", "12"]))
    assert wait_done(run, 90) == "succeeded", log_tail(run)
    printed = [json.loads(line) for line in run.log_path.read_text().splitlines() if line.startswith("{")]
    assert printed == [json.loads(line) for line in bare.stdout.splitlines()]  # exactly as without it
    assert not command.wrapper_active(run)
    logs = events(run, "log")
    assert [(e["step"], e["loss"], e["learning_rate"]) for e in logs] == [
        (p["step"], p["loss"], p["lr"]) for p in printed
    ]
    (view,) = Monitor().poll()
    assert (view.state, view.step, view.loss, view.metrics_found) == (
        "succeeded",
        12,
        printed[-1]["loss"],
        True,
    )


def test_two_process_torchrun_script_without_trainer(project: Path) -> None:
    run = submit(
        spec_for(project, ["ranks.py"], command_launcher="torchrun", processes=2, metrics_source="json")
    )
    assert wait_done(run, 90) == "succeeded", log_tail(run)
    logs = events(run, "log")
    assert [e["step"] for e in logs] == [1, 2, 3, 4, 5, 6] and {e["world"] for e in logs} == {2.0}
    assert "--nproc-per-node=2" in run.status().command


def test_accelerate_style_loop_under_accelerate_launch(project: Path) -> None:
    run = submit(spec_for(project, ["acc.py"], command_launcher="accelerate"))
    assert wait_done(run, 120) == "succeeded", log_tail(run)
    printed = [json.loads(line) for line in run.log_path.read_text().splitlines() if line.startswith("{")]
    assert [(e["step"], e["loss"]) for e in events(run, "log")] == [(p["step"], p["loss"]) for p in printed]
    assert len(printed) == 8 and printed[-1]["loss"] < printed[0]["loss"]
    assert "accelerate.commands.launch" in " ".join(run.status().command)


def test_crashing_script_gets_its_error_line_and_the_explainer_answers(project: Path) -> None:
    (project / "crash.py").write_text("print('starting', flush=True)\nimport habana_frameworks.torch.core\n")
    run = submit(spec_for(project, [PYTHON, "crash.py"]))
    assert wait_done(run, 60) == "failed"
    assert run.status().error == "ModuleNotFoundError: No module named 'habana_frameworks'"
    matches = explain(read_log_tail(run.log_path))
    assert "no-habana-frameworks" in [m.entry.id for m in matches]
    (view,) = Monitor().poll()
    assert view.metrics_found is False  # the list says no metrics were found


def test_refused_before_anything_starts(project: Path) -> None:
    (project / "run.sh").write_text("#!/bin/sh\necho hi\n")
    cases = {
        "missing script": spec_for(project, [PYTHON, "nope.py"]),
        "not executable": spec_for(project, ["./run.sh"]),
        "unknown program": spec_for(project, ["torchrunn", "train.py"]),
        "script under a launcher": spec_for(project, ["gone.py"], command_launcher="torchrun"),
        "bad pattern": spec_for(
            project, [PYTHON, "loop.py"], metrics_source="pattern", metrics_pattern="loss (\\d+)"
        ),
    }
    reasons = {}
    for name, spec in cases.items():
        with pytest.raises(InvalidSpec) as caught:
            submit(spec)
        reasons[name] = str(caught.value)
    assert "nope.py is not in" in reasons["missing script"]
    assert "./run.sh is not executable: chmod +x it, or run `bash ./run.sh`" in reasons["not executable"]
    assert "'torchrunn' is not a program on PATH" in reasons["unknown program"]
    assert "the script gone.py is not in" in reasons["script under a launcher"]
    assert "has no named group" in reasons["bad pattern"]
    with pytest.raises(SpecError, match="'srun' is not one of direct, torchrun, accelerate, deepspeed"):
        spec_for(project, ["train.py"], command_launcher="srun")
    assert runfolder.all_runs() == []  # nothing was created


def test_survives_the_panel_and_stops_by_signal_without_a_trainer(project: Path) -> None:
    """`gaudi-tui run` returns at once (the panel's side is gone); another process finds the job,
    sees its metrics, and a stop without the Trainer callback is SIGINT."""
    (project / "slow.py").write_text(
        "import json, time\nfor i in range(1, 10000):\n"
        "    print(json.dumps({'step': i, 'loss': 1 / i}), flush=True)\n    time.sleep(0.05)\n"
    )
    done = subprocess.run(
        [PYTHON, "-m", "gaudi_tui", "run", "--set", "device=cpu", "--", PYTHON, "slow.py"],
        cwd=project, capture_output=True, text=True, env=child_env(), timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run,) = runfolder.all_runs()
    assert f"started job {run.id} on cpu (1 process(es), direct)" in done.stdout
    wait_for(lambda: len(events(run, "log")) >= 5, 60, "metrics from the output")
    listed = subprocess.run(
        [PYTHON, "-m", "gaudi_tui", "jobs", "--json"],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
    )
    (view,) = json.loads(listed.stdout)
    assert (view["id"], view["state"], view["kind"], view["metrics_found"]) == (
        run.id,
        "running",
        "command",
        True,
    )
    assert view["step"] >= 5
    assert command.stop_mode(run, run.spec()).startswith("s sends SIGINT to the command")
    control.stop(run)
    assert wait_done(run, 30) == "stopped"
    assert run.status().error == "stopped by SIGINT"
    assert "KeyboardInterrupt" in run.log_path.read_text()
    # the spec.toml launches it again
    assert run.spec().command == (PYTHON, "slow.py") and run.spec().workdir == str(project)


def test_attach_to_a_run_started_by_hand(project: Path) -> None:
    log = project / "train.log"
    with log.open("wb") as out:
        mine = subprocess.Popen(
            [PYTHON, "-c", "import json,time\nfor i in range(1,10000):\n print(json.dumps({'step':i,'loss':2/i}),"
             "flush=True); time.sleep(0.05)"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        wrong = from_mapping({"kind": "command", "log_file": str(log), "pid": mine.pid, "pid_started": 1.0})
        with pytest.raises(InvalidSpec, match="no longer the process that was attached"):
            submit(wrong)
        done = subprocess.run(
            [PYTHON, "-m", "gaudi_tui", "run", "--attach", str(log), "--pid", str(mine.pid)],
            cwd=project, capture_output=True, text=True, env=child_env(), timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        (run,) = runfolder.all_runs()
        wait_for(lambda: len(events(run, "log")) >= 3, 30, "metrics from the attached log")
        assert events(run, "log")[0]["step"] == 1  # read from the start of the log
        assert f"SIGINT to PID {mine.pid}" in command.stop_mode(run, run.spec())
        control.stop(run)
        assert wait_done(run, 30) == "stopped"
        assert mine.wait(timeout=10) != 0  # it got SIGINT
        assert run.status().error == "stopped by SIGINT"
    finally:
        if mine.poll() is None:
            os.kill(mine.pid, signal.SIGKILL)
            mine.wait()


def test_the_wrapper_runs_the_sitecustomize_it_hides(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text(
        "import sys\nsys.stderr.write('site of the distribution ran\\n')\n"
    )
    env = {
        **os.environ,
        "GAUDI_TUI_RUN": str(tmp_path),
        "PYTHONPATH": f"{command.SITE_DIR}{os.pathsep}{other}",
    }
    done = subprocess.run(
        [sys.executable, "-c", "import sys; print(type(sys.meta_path[0]).__name__)"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.stderr == "site of the distribution ran\n" and done.stdout == "_Finder\n"


def test_resume_is_refused_without_a_checkpoint(project: Path) -> None:
    (project / "quick.py").write_text("print('done')\n")
    run = submit(spec_for(project, [PYTHON, "quick.py"], output_dir="out"))
    wait_done(run, 60)
    stopped = run.status().with_(state="cancelled")
    run.write_status(stopped)
    with pytest.raises(control.JobControlError, match="holds no complete checkpoint-N folder"):
        control.resume(run)
