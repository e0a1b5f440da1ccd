"""Launcher argv and job environment for each accelerator."""

from __future__ import annotations

from pathlib import Path

from gaudi_tui.core.jobs.launch import command, job_env, prepare
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from tests.conftest import CPU
from tests.jobs.conftest import GAUDI2

RUN = RunFolder(Path("/runs/r1"))


def test_one_process_runs_the_training_module_directly() -> None:
    spec = prepare(JobSpec(), CPU)
    assert command(RUN, spec, python="py") == ["py", "-m", "gaudi_tui.core.jobs.worker.train", "/runs/r1"]


def test_cpu_multi_process_is_torchrun_standalone() -> None:
    spec = prepare(JobSpec(processes=2), CPU)
    argv = command(RUN, spec, resume=Path("/runs/r1/checkpoints/checkpoint-7"), python="py")
    assert argv == [
        "py", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "--module",
        "gaudi_tui.core.jobs.worker.train", "/runs/r1", "--resume", "/runs/r1/checkpoints/checkpoint-7",
    ]  # fmt: skip


def test_gaudi_uses_accelerate_one_process_per_card_with_visible_modules() -> None:
    spec = prepare(JobSpec(), GAUDI2, selected_cards=(2, 3))
    argv = command(RUN, spec, python="py")
    assert argv[:4] == ["py", "-m", "accelerate.commands.launch", "--num_processes=2"]
    assert "--multi_gpu" in argv
    assert argv[-3:] == ["--module", "gaudi_tui.core.jobs.worker.train", "/runs/r1"]
    env = job_env(RUN, spec, {"PATH": "/bin"})
    assert env["HABANA_VISIBLE_MODULES"] == "2,3"
    assert env["PT_ENABLE_INT64_SUPPORT"] == "1"
    assert env["PT_HPU_METRICS_FILE"] == "/runs/r1/hpu_metrics.json"
    assert env["PATH"] == "/bin"


def test_env_precedence_accelerator_then_checklist_fixes_then_spec() -> None:
    spec = prepare(
        JobSpec(env={"A": "spec"}),
        GAUDI2,
        env_fixes={"A": "fix", "PT_ENABLE_INT64_SUPPORT": "0", "B": "fix"},
    )
    assert spec.env["A"] == "spec"
    assert spec.env["B"] == "fix"
    assert spec.env["PT_ENABLE_INT64_SUPPORT"] == "0"


def test_cpu_job_env_has_no_gaudi_settings() -> None:
    env = job_env(RUN, prepare(JobSpec(), CPU), {})
    assert not any(k.startswith(("PT_HPU", "HABANA")) for k in env)
    assert env["PYTHONUNBUFFERED"] == "1"
