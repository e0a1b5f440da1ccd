"""The user's own command on the real two-node loopback cluster: a Trainer script the test writes (as
a user would, importing nothing of gaudi-tui) runs as one srun task per card on both nodes, under
the panel's wrapper; loss falls, each rank sees the cards Slurm gave it, and a graceful stop has
both ranks at one step with one checkpoint. Launchers srun cannot stand in for are refused."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from gaudi_tui.core.demo import model_dir
from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.kinds import command
from gaudi_tui.core.jobs.spec import JobSpec, from_mapping
from gaudi_tui.core.jobs.targets.slurm import record as slurm_record
from tests.commands import scripts
from tests.conftest import ROOT
from tests.jobs.conftest import events, log_tail, wait_done, wait_for
from tests.slurm.cluster import SlurmTestCluster
from tests.slurm.test_slurm_jobs import CPU

SEES = """import os
print("rank", os.environ["RANK"], "of", os.environ["WORLD_SIZE"], "sees cards",
      os.environ.get("HABANA_VISIBLE_MODULES", "none"), flush=True)
"""
"""Put in front of the user's script: what each rank's process itself sees."""

ENDLESS = """import json, os, time
step = 0
while True:
    step += 1
    if os.environ["RANK"] == "0":
        print(json.dumps({"step": step, "loss": 1.0 / step}), flush=True)
    time.sleep(0.1)
"""
"""Runs until it is stopped, and handles no signal: Python's SIGINT ends it."""


def command_spec(project: Path, **changes: object) -> JobSpec:
    values: dict[str, object] = {
        "kind": "command",
        "command": [
            "train.py",
            "--model_name_or_path",
            str(model_dir()),
            "--train_file",
            "train.txt",
            "--output_dir",
            "out",
            "--logging_steps",
            "2",
            "--max_steps",
            "400",
            "--step_sleep",
            "0.05",
        ],  # fmt: skip
        "command_launcher": "torchrun",
        "workdir": str(project),
        "device": "cpu",
        "target": "slurm",
        "slurm_nodes": 2,
        "slurm_cards_per_node": 1,
        "env": {"PYTHONPATH": str(ROOT)},
    }
    values.update(changes)
    return from_mapping(values)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    scripts.write(folder, "train.py", SEES + scripts.HF_TRAINER)
    scripts.write(folder, "ranks.py", scripts.TORCHRUN_LOOP)
    scripts.write(folder, "endless.py", ENDLESS)
    scripts.train_file(folder)
    return folder


@pytest.mark.slow
def test_two_node_command_job_sees_its_cards_charts_and_stops_at_one_step(
    slurm: SlurmTestCluster, project: Path
) -> None:
    run = control.submit(command_spec(project), CPU)
    wait_for(lambda: len(events(run, "log")) >= 4, 120, "four logged steps\n" + log_tail(run))
    assert command.wrapper_active(run)
    rec = slurm_record.read(run)
    assert rec is not None and rec.nodes == ["n1", "n2"]
    assert {r: info["node"] for r, info in rec.ranks.items()} == {"0": "n1", "1": "n2"}
    log = run.log_path.read_text(errors="replace")
    for rank, info in rec.ranks.items():  # the command's own processes see the card Slurm allocated
        assert len(info["cards"]) == 1
        assert f"rank {rank} of 2 sees cards {info['habana_visible_modules']}" in log
    script = (run.path / "slurm" / "attempt-1.sbatch").read_text()
    assert f"--chdir={project}" in script and "torch.distributed.run" not in script  # srun is the launcher
    assert events(run, "begin")[0]["world_size"] == 2
    losses = [e["loss"] for e in events(run, "log")]
    assert losses[-1] < losses[0], losses

    control.stop(run)
    assert wait_done(run, 90) == "stopped", log_tail(run)
    log = run.log_path.read_text(errors="replace")
    stops = re.findall(r"\[gaudi-tui\] rank (\d) stopping at step (\d+)", log)
    assert sorted(r for r, _ in stops) == ["0", "1"] and len({s for _, s in stops}) == 1, stops
    step = int(stops[0][1])
    assert [p.name for p in (project / "out").iterdir()] == [f"checkpoint-{step}"]
    assert events(run, "end")[-1]["stopped"] is True
    assert command.newest_checkpoint(run, run.spec()) == project / "out" / f"checkpoint-{step}"


def test_two_node_script_without_trainer_is_charted_from_its_output(
    slurm: SlurmTestCluster, project: Path
) -> None:
    """A gloo loop (no Trainer, no callback): rank 0's printed JSON, tailed from Slurm's output file,
    becomes the charts' metrics, and the attempt's metrics end with it."""
    run = control.submit(command_spec(project, command=["ranks.py"]), CPU)
    assert wait_done(run, 90) == "succeeded", log_tail(run)
    logs = events(run, "log")
    assert [e["step"] for e in logs] == [1, 2, 3, 4, 5, 6]
    assert '"world": 2' in run.log_path.read_text()  # both nodes' ranks joined the one process group
    assert logs[-1]["loss"] < logs[0]["loss"] and events(run, "end")[-1]["stopped"] is False
    assert not command.wrapper_active(run)


def test_stop_without_a_callback_interrupts_the_ranks(slurm: SlurmTestCluster, project: Path) -> None:
    """No Trainer reads the STOP file: `s` is SIGINT to the ranks on both nodes; the job is stopped."""
    run = control.submit(command_spec(project, command=["endless.py"], kill_grace_s=20.0), CPU)
    wait_for(lambda: len(events(run, "log")) >= 3, 60, "three printed steps\n" + log_tail(run))
    assert "sends SIGINT" in command.stop_mode(run, run.spec())
    control.stop(run)
    assert wait_done(run, 30) == "stopped", log_tail(run)
    log = run.log_path.read_text(errors="replace")
    assert "SIGINT sent to the ranks" in log and log.count("KeyboardInterrupt") == 2  # each node's rank
    assert run.status().error is None  # type: ignore[union-attr]
    assert events(run, "end")[-1]["stopped"] is True


def test_launchers_srun_cannot_stand_in_for_are_refused(slurm: SlurmTestCluster, project: Path) -> None:
    _, problems = control.check(command_spec(project, command_launcher="accelerate"), CPU)
    assert [p.field for p in problems] == ["command_launcher"]
    assert "srun starts one task per card and is the launcher" in problems[0].message
    typed = command_spec(
        project,
        command_launcher="direct",
        command=[str(Path(sys.executable).parent / "torchrun"), "train.py"],
    )
    _, problems = control.check(typed, CPU)
    assert [p.field for p in problems] == ["command"] and "let srun start one task per card" in problems[
        0
    ].message
    _, problems = control.check(command_spec(project), CPU)
    assert problems == []
