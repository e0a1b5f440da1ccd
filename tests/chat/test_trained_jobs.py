"""Chat with a job's id: a final model saved in shards is used once whole, a final model still being
written never is, and a command job answers from the checkpoints its Trainer saved in its own output
folder (as resume finds them), or from the final model it saved there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gaudi_tui.core import demo
from gaudi_tui.core.chat import trained
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.jobs import control, runfolder
from gaudi_tui.core.jobs.runfolder import COMPLETE_MARKER
from gaudi_tui.core.jobs.spec import JobSpec, from_mapping
from gaudi_tui.core.jobs.status import JobStatus
from tests.commands import scripts
from tests.conftest import CPU, PYTHON, child_env
from tests.jobs.conftest import events, log_tail, no_stray_processes, wait_done  # noqa: F401 - autouse guard

SAVES_ITS_MODEL = scripts.HF_TRAINER + "trainer.save_model(args.output_dir)\n"
"""The Trainer script, saving its final model into its output folder at the end, as many do."""


def sharded_demo(folder: Path) -> list[str]:
    """The demo model saved by Transformers in 1 MB shards; the shards' names."""
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(demo.model_dir()).save_pretrained(folder, max_shard_size="1MB")
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    assert len(shards) > 1 and not (folder / "model.safetensors").exists()
    return shards


@pytest.fixture
def run() -> runfolder.RunFolder:
    folder = runfolder.create(JobSpec(name="Full"), "cpu")
    folder.write_status(JobStatus(state="succeeded"))
    return folder


def test_a_sharded_final_model_is_used_once_every_shard_is_there(run: runfolder.RunFolder) -> None:
    shards = sharded_demo(run.model_dir)
    found = trained.resolve(run.id)
    assert found.base_ref == str(run.model_dir) and found.run_id == run.id and found.checkpoint is None
    assert trained.run_model(run.id) == str(run.model_dir)
    (run.model_dir / shards[-1]).unlink()  # a copy that stopped half-way
    with pytest.raises(ChatError) as caught:
        trained.resolve(run.id)
    assert caught.value.kind == "not_trained"


def test_a_final_model_still_being_written_is_not_used(run: runfolder.RunFolder) -> None:
    sharded_demo(run.model_dir)
    run.write_status(JobStatus(state="running"))  # the worker is in save_model now
    with pytest.raises(ChatError) as caught:
        trained.resolve(run.id)
    assert caught.value.kind == "not_trained" and "still writing its final model" in caught.value.message
    step = run.checkpoints_dir / "checkpoint-30"
    shutil.copytree(run.model_dir, step)
    (step / "trainer_state.json").write_text("{}")
    with pytest.raises(ChatError):
        trained.resolve(run.id)  # without the panel's completion marker it is not complete either
    (step / COMPLETE_MARKER).write_text("")
    found = trained.resolve(run.id)
    assert found.checkpoint == "checkpoint-30" and found.base_ref == str(step)
    run.write_status(JobStatus(state="succeeded"))
    assert trained.resolve(run.id).checkpoint is None  # ended: its final model now


def _command_job(project: Path, script: str) -> runfolder.RunFolder:
    project.mkdir()
    scripts.write(project, "train.py", script)
    scripts.train_file(project)
    spec = from_mapping(
        {
            "kind": "command",
            "command": [
                PYTHON,
                "train.py",
                "--model_name_or_path",
                str(demo.model_dir()),
                "--train_file",
                "train.txt",
                "--output_dir",
                "out",
                "--max_steps",
                "8",
                "--save_steps",
                "4",
                "--logging_steps",
                "2",
                "--disable_tqdm",
            ],  # fmt: skip
            "workdir": str(project),
            "device": "cpu",
        }
    )
    run = control.submit(spec, CPU, env=child_env())
    assert wait_done(run, 240) == "succeeded", log_tail(run)
    assert [e["checkpoint"] for e in events(run, "save")][-1].endswith("checkpoint-8")
    return run


@pytest.mark.slow
def test_a_command_job_answers_from_the_checkpoints_its_trainer_saved(tmp_path: Path) -> None:
    project = tmp_path / "project"
    run = _command_job(project, scripts.HF_TRAINER)
    newest = project / "out" / "checkpoint-8"
    assert (newest / COMPLETE_MARKER).is_file()
    found = trained.resolve(run.id[-4:])
    assert (found.base_ref, found.run_id, found.checkpoint) == (str(newest), run.id, "checkpoint-8")
    assert found.label.endswith(f"{run.id[-4:]} · checkpoint-8")
    assert trained.run_model(run.id) == str(newest)  # Training's t


@pytest.mark.slow
def test_a_command_job_answers_from_the_final_model_it_saved(tmp_path: Path) -> None:
    project = tmp_path / "project"
    run = _command_job(project, SAVES_ITS_MODEL)
    found = trained.resolve(run.id)
    assert (found.base_ref, found.run_id, found.checkpoint) == (str(project / "out"), run.id, None)
    assert found.provenance().summary().endswith("final model (fine-tuned weights)")


def test_a_command_job_is_compared_with_the_model_its_command_started_from(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(demo.model_dir(), project / "base-model")  # the user's own model, not the demo's
    step = project / "out" / "checkpoint-5"
    shutil.copytree(demo.model_dir(), step)
    (step / "trainer_state.json").write_text("{}")
    (step / COMPLETE_MARKER).write_text("")

    def job(command: list[str]) -> runfolder.RunFolder:
        values = {
            "kind": "command",
            "command": command,
            "workdir": str(project),
            "output_dir": str(project / "out"),
        }
        run = runfolder.create(from_mapping(values), "cpu")
        run.write_status(JobStatus(state="succeeded"))
        return run

    run = job(["train.py", "--model_name_or_path", "base-model", "--output_dir", "out"])
    tuned, base = trained.resolve_pair(run.id, "base")
    assert tuned.base_ref == str(step) and base.base_ref == str(project / "base-model")
    bare = job(["train.py"])
    assert trained.resolve(bare.id).checkpoint == "checkpoint-5"
    with pytest.raises(ChatError) as caught:
        trained.resolve_pair(bare.id, "base")
    assert caught.value.kind == "no_base" and "give the second model by name" in caught.value.message
