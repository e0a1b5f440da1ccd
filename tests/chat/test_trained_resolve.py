"""Resolving what training produced (core/chat/trained.py, no torch): run ids, model/ before
checkpoints, the adapter's base (its folder, the run's spec, the Hub cache) and what is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gaudi_tui.core import demo
from gaudi_tui.core.chat import compare, trained
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.options import LoadOptions
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.runfolder import COMPLETE_MARKER
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus


def adapter(folder: Path, base: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(
        json.dumps({"base_model_name_or_path": base, "peft_type": "LORA"})
    )
    (folder / "adapter_model.safetensors").write_bytes(b"weights")
    return folder


def checkpoint(run: runfolder.RunFolder, step: int, complete: bool = True) -> Path:
    folder = adapter(run.checkpoints_dir / f"checkpoint-{step}", "/elsewhere/gaudi_tui/core/demo/model")
    (folder / "trainer_state.json").write_text("{}")
    if complete:
        (folder / COMPLETE_MARKER).write_text("")
    return folder


@pytest.fixture
def run() -> runfolder.RunFolder:
    folder = runfolder.create(JobSpec(name="LoRA", lora=True, quantization="nf4"), "cpu")
    folder.write_status(JobStatus(state="running"))
    return folder


def test_a_running_job_answers_from_its_newest_complete_checkpoint_then_its_model(
    run: runfolder.RunFolder,
) -> None:
    with pytest.raises(ChatError) as caught:
        trained.resolve(run.id)
    assert caught.value.kind == "not_trained" and "save_steps" in caught.value.message
    checkpoint(run, 10)
    checkpoint(run, 20, complete=False)  # still being written: not used
    found = trained.resolve(run.id[-4:])
    assert (found.checkpoint, found.run_id, found.label) == (
        "checkpoint-10",
        run.id,
        f"LoRA · {run.id[-4:]} · checkpoint-10",
    )
    # A base recorded by another checkout's path is this installation's demo model; QLoRA's from the spec.
    assert found.base_ref == str(demo.model_dir()) and found.base_label == demo.DEMO_LABEL
    assert found.quantized_base == "nf4"
    adapter(run.model_dir, str(demo.model_dir()))
    assert trained.resolve(run.id).checkpoint == "checkpoint-10"  # model/ of a running job is being written
    run.write_status(JobStatus(state="succeeded"))
    final = trained.resolve(run.id)
    assert final.adapter == run.model_dir and final.checkpoint is None
    assert trained.resolve(str(run.path)).adapter == run.model_dir  # the run folder itself works too
    assert final.provenance().summary() == f"LoRA · {run.id[-4:]} · final model (base demo model, adapter)"


def test_a_missing_base_is_named_with_where_it_was_looked_for(tmp_path: Path) -> None:
    folder = adapter(tmp_path / "lone", str(tmp_path / "gone"))
    with pytest.raises(ChatError) as caught:
        trained.resolve(str(folder))
    assert caught.value.kind == "base_missing"
    assert (
        f"trained on {tmp_path / 'gone'}" in caught.value.message
        and "looked in the folder" in caught.value.message
    )
    hub = adapter(tmp_path / "hub", "someone/not-cached-model")
    with pytest.raises(ChatError) as caught:
        trained.resolve(str(hub))  # HF_HUB_OFFLINE=1 in every test
    assert "Hugging Face cache" in caught.value.message and "someone/not-cached-model" in caught.value.message


def test_comparing_plans_one_engine_only_when_the_two_differ_by_an_adapter(run: runfolder.RunFolder) -> None:
    checkpoint(run, 10)
    checkpoint(run, 20)
    with_base = compare.plan(LoadOptions(run.id), "base")
    assert with_base.shared and with_base.engines[0].compare == "base"
    two_checkpoints = compare.plan(
        LoadOptions(str(run.checkpoints_dir / "checkpoint-20")), str(run.checkpoints_dir / "checkpoint-10")
    )
    assert two_checkpoints.shared
    merged = compare.plan(LoadOptions(run.id, merge=True), "base")  # a merged adapter cannot be switched off
    assert not merged.shared and merged.engines[1].model == str(demo.model_dir())
    with pytest.raises(ChatError, match="same model"):
        compare.plan(LoadOptions("demo"), "demo")
    with pytest.raises(ChatError, match="no separate base"):
        compare.plan(LoadOptions("demo"), "base")


def test_a_full_fine_tune_is_compared_with_the_model_it_started_from(run: runfolder.RunFolder) -> None:
    run.model_dir.mkdir()
    (run.model_dir / "config.json").write_text("{}")
    (run.model_dir / "model.safetensors").write_bytes(b"weights")
    run.write_status(JobStatus(state="succeeded"))  # its final model is whole
    found = trained.resolve(run.id)
    assert found.adapter is None and found.base_ref == str(run.model_dir) and found.run_id == run.id
    planned = compare.plan(LoadOptions(run.id), "base")  # its spec's model: the demo model, another engine
    assert not planned.shared and planned.engines[1].model == str(demo.model_dir())
