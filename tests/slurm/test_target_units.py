"""The Slurm target's pure parts: spec checks against recorded sinfo, the batch script, and each
rank's environment from Slurm's variables (the recorded env of a real srun step)."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.targets.slurm import checks, script
from gaudi_tui.core.jobs.worker import slurm_rank
from gaudi_tui.core.slurm import model

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
PARTS = {"main": {"PartitionName": "main", "Default": "YES", "State": "UP", "MaxNodes": "UNLIMITED"}}


def nodes(name: str = "sinfo.json") -> list[model.SlurmNode]:
    return model.nodes_from_json(json.loads((DATA / name).read_text()))


def spec(**changes: object) -> JobSpec:
    return checks.prepare(replace(JobSpec(target="slurm", device="hpu"), **changes))  # type: ignore[arg-type]


def problems(s: JobSpec, found: list[model.SlurmNode] | None = None) -> list[str]:
    out = [f"{f}: {m}" for f, m in checks.field_problems(s)]
    return out or [f"{f}: {m}" for f, m in checks.cluster_problems(s, found or nodes(), PARTS)]


def test_intel_layout_rules_and_fields() -> None:
    assert problems(spec(slurm_nodes=2, slurm_cards_per_node=8)) == []
    assert problems(spec(slurm_cards_per_node=4)) == []
    assert "1, 2, 4 or 8" in problems(spec(slurm_cards_per_node=3))[0]
    assert "whole hosts" in problems(spec(slurm_nodes=2, slurm_cards_per_node=4))[0]
    assert "not a Slurm time" in problems(spec(slurm_time_limit="2h"))[0]
    assert "--output" in problems(spec(slurm_options=("--output=/tmp/x",)))[0]  # the panel's own
    assert problems(spec(slurm_options=("--constraint=ib", "--exclusive"))) == []
    cpu = checks.prepare(
        replace(JobSpec(target="slurm", device="cpu"), slurm_nodes=2, slurm_cards_per_node=1)
    )
    assert problems(cpu) == [] and cpu.processes == 2


def test_cluster_checks_against_recorded_sinfo() -> None:
    assert problems(spec(slurm_partition="gpu")) == ["slurm_partition: no partition 'gpu'; partitions: main"]
    assert problems(spec(slurm_gres="hpu"))[0].startswith(
        "slurm_gres: no node of partition main has GRES 'hpu'"
    )
    assert "gpu:gaudi2" in problems(spec(slurm_gres_type="gaudi3"))[0]
    never = problems(spec(slurm_nodes=3, slurm_cards_per_node=8))[0]
    assert never.startswith(
        "slurm_nodes: can never run: 3 node(s) with 8 cards each asked, partition main has 2"
    )
    # a drained node still counts: it may come back, and the job then waits with a reason
    assert problems(spec(slurm_nodes=2), nodes("sinfo_json_draining_down.json")) == []


def test_batch_script(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run-1")
    s = spec(slurm_nodes=2, slurm_partition="main", slurm_time_limit="30", slurm_options=("--constraint=ib",))
    text = script.render(
        s, run, 3, ["python", "-m", "gaudi_tui.core.jobs.worker.train", str(run.path)], "python"
    )
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert not [line for line in lines if line.startswith("#SBATCH")]  # options go on sbatch's argv
    options = script.options(s, run, 3)
    assert {"--gres=gpu:8", "--nodes=2", "--ntasks-per-node=8"} <= set(options)
    assert f"--job-name=gaudi-tui-{run.id}-a3" in options and "--open-mode=append" in options
    assert "--signal=B:USR1@120" in options and "--time=30" in options
    assert options[-1] == "--constraint=ib" and "#   --constraint=ib" in lines  # the user's last
    assert options[:-1] == sorted(options[:-1])  # the panel's own, sorted
    srun = next(line for line in lines if line.startswith("srun "))
    assert shlex.split(srun.rstrip(" &"))[-5:] == [
        "--",
        "python",
        "-m",
        "gaudi_tui.core.jobs.worker.train",
        str(run.path),
    ]
    assert "touch" in next(line for line in lines if line.startswith("trap "))


def _recorded_step_env() -> dict[str, str]:
    env = {}
    for line in (DATA / "env_batch_and_srun_step.out").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and key.isupper():
            env[key] = value
    return env


def test_rank_environment_from_a_real_srun_step() -> None:
    env = _recorded_step_env()
    assert env["SLURM_STEP_GPUS"] == "3,4"  # the recorded step got cards 3 and 4 of n2
    out, info = slurm_rank.rank_env(env, "gpu", hl_smi=None)
    assert out["HABANA_VISIBLE_MODULES"] == "3,4" and info["cards"] == [3, 4]
    assert "no hl-smi" in str(info["modules_from"])
    assert (out["RANK"], out["WORLD_SIZE"], out["LOCAL_RANK"], out["MASTER_ADDR"]) == (
        "0",
        "1",
        "0",
        "127.0.0.1",
    )
    hpu, hpu_info = slurm_rank.rank_env(env, "hpu", hl_smi=None)
    assert "HABANA_VISIBLE_MODULES" not in hpu and "names no cards" in str(hpu_info["modules_from"])
    assert slurm_rank.tasks_per_node("2(x3),1") == [2, 2, 2, 1]


@pytest.mark.parametrize("job_id", [1, 36036, 4294967294])
def test_the_rendezvous_port_is_valid_and_clear_of_ephemeral_ports_for_any_job_id(job_id: int) -> None:
    env = {**_recorded_step_env(), "SLURM_JOB_ID": str(job_id)}
    ports = {
        int(slurm_rank.rank_env({**env, "SLURM_PROCID": r}, "gpu", None)[0]["MASTER_PORT"]) for r in "01"
    }
    assert len(ports) == 1  # every rank of the job derives the same port
    port = ports.pop()
    # 20000-29499: below Linux's default ephemeral range (32768-60999), short of torchrun's 29500
    assert 20000 <= port < 29500 and port == slurm_rank.master_port(job_id)
    neighbours = {slurm_rank.master_port(job_id + step) for step in range(100)}
    assert len(neighbours) == 100  # array tasks and jobs submitted in turn never share one
    info = slurm_rank.rank_env(env, "gpu", None)[1]
    assert info["master"] == f"127.0.0.1:{port}"


def test_indices_map_to_module_ids_through_hl_smi(tmp_path: Path) -> None:
    # the index → module_id table of Intel's documentation (hl-smi -Q index,module_id -f csv)
    fake = tmp_path / "hl-smi"
    fake.write_text("#!/bin/sh\nprintf '3, 6\\n1, 4\\n2, 7\\n0, 5\\n4, 2\\n6, 0\\n'\n")
    fake.chmod(0o755)
    modules, how = slurm_rank.module_ids((3, 4), str(fake))
    assert modules == (6, 2) and "hl-smi" in how
    assert slurm_rank.module_ids((7,), str(fake))[0] == (7,)  # unknown index: passed on, said why
