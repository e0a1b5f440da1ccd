"""What a serve job serves: a job id serves its final model (full fine-tune) or its base + adapter, and
a model that cannot be served is refused before anything starts, saying why and the fix (a Gaudi*
training architecture, a flag given as the model, a folder that is not there)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gaudi_tui.core import demo
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus
from gaudi_tui.core.serve import model
from tests.conftest import PYTHON, child_env


def gaudi_trained(folder: Path) -> Path:
    """The demo model as optimum-habana's GaudiTrainer saves a fine-tune (vllm-fork issue 511)."""
    shutil.copytree(demo.model_dir(), folder)
    config = json.loads((folder / "config.json").read_text())
    config["architectures"] = ["GaudiQwen3ForCausalLM"]
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_gaudi_training_architecture_is_refused_with_the_fix(tmp_path: Path) -> None:
    folder = gaudi_trained(tmp_path / "tuned")
    with pytest.raises(model.ServeRefused) as caught:
        model.resolve(str(folder))
    said = str(caught.value)
    assert "GaudiQwen3ForCausalLM" in said and "issue 511" in said
    assert 'Fix: set "architectures": ["Qwen3ForCausalLM"]' in said


def test_gaudi_tui_serve_refuses_a_bad_model_and_starts_nothing(tmp_path: Path, gaudi_home: Path) -> None:
    folder = gaudi_trained(tmp_path / "tuned")
    for name, says in (
        (str(folder), '"architectures": ["Qwen3ForCausalLM"]'),
        (str(tmp_path / "missing"), "does not exist"),
        ("--help-me", "starts with '-'"),
    ):
        out = subprocess.run(
            [PYTHON, "-m", "gaudi_tui", "serve", "--device", "cpu", "--", name] if name.startswith("-")
            else [PYTHON, "-m", "gaudi_tui", "serve", name, "--device", "cpu"],
            capture_output=True, text=True, env=child_env(), timeout=120,
        )  # fmt: skip
        assert out.returncode == 2 and "serve_model:" in out.stderr and says in out.stderr, out.stderr
    assert runfolder.all_runs() == []


def full_run(tmp_path: Path) -> runfolder.RunFolder:
    run = runfolder.create(JobSpec(name="Full"), "cpu")
    shutil.copytree(demo.model_dir(), run.model_dir, dirs_exist_ok=True)
    run.write_status(JobStatus(state="succeeded"))
    return run


def test_a_full_fine_tune_is_served_from_its_model_folder(tmp_path: Path) -> None:
    run = full_run(tmp_path)
    served = model.resolve(run.id[-4:])
    assert served.load == str(run.model_dir) and served.adapter is None


def test_a_lora_job_is_served_as_its_base_and_adapter(tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    run = runfolder.create(JobSpec(name="LoRA", lora=True), "cpu")
    base = AutoModelForCausalLM.from_pretrained(demo.model_dir())
    get_peft_model(base, LoraConfig(r=2, target_modules=["q_proj"])).save_pretrained(run.model_dir)
    run.write_status(JobStatus(state="succeeded"))
    served = model.resolve(run.id)
    assert served.adapter == run.model_dir and served.load == str(demo.model_dir())
    assert served.adapter_name.startswith("LoRA-") and " " not in served.adapter_name
