"""Validation before launch: each rule of the issue gives one clear problem; a good spec gives none."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.demo import model_dir
from gaudi_tui.core.jobs.launch import prepare
from gaudi_tui.core.jobs.spec import PRESETS, JobSpec
from gaudi_tui.core.jobs.validate import validate
from tests.conftest import CPU
from tests.jobs.conftest import GAUDI1, GAUDI2


def problems(spec: JobSpec, accel: Accelerator = CPU, env: dict[str, str] | None = None) -> dict[str, str]:
    prepared = prepare(spec, accel)
    return {p.field: p.message for p in validate(prepared, accel, env or {})}


@pytest.mark.parametrize("name", list(PRESETS))
def test_presets_are_valid_on_cpu(name: str) -> None:
    assert problems(PRESETS[name]) == {}


@pytest.mark.parametrize("name", ["demo fine-tune", "LoRA", "QLoRA"])
def test_presets_are_valid_on_gaudi2(name: str) -> None:
    assert problems(PRESETS[name], GAUDI2) == {}


def test_unsupported_card_set_names_the_nearest_valid_one() -> None:
    found = problems(JobSpec(cards=(0, 2)), GAUDI2)
    assert found == {
        "cards": "{0,2} is not supported: 2 cards must be one of the supported 2-card sets; "
        "nearest valid set is {0,1}"
    }


def test_supported_card_set_sets_one_process_per_card() -> None:
    spec = prepare(JobSpec(), GAUDI2, selected_cards=(4, 5, 6, 7))
    assert (spec.cards, spec.processes, spec.launcher) == ((4, 5, 6, 7), 4, "accelerate")
    assert spec.env["HABANA_VISIBLE_MODULES"] == "4,5,6,7"
    assert validate(spec, GAUDI2, {}) == []


def test_torch_compile_with_lazy_mode_is_refused_on_gaudi() -> None:
    spec = JobSpec(torch_compile=True, env={"PT_HPU_LAZY_MODE": "1"})
    assert "needs eager mode, but PT_HPU_LAZY_MODE=1" in problems(spec, GAUDI2)["torch_compile"]


def test_torch_compile_alone_gets_eager_mode_from_the_accelerator() -> None:
    spec = prepare(JobSpec(torch_compile=True), GAUDI2)
    assert spec.env["PT_HPU_LAZY_MODE"] == "0"
    assert validate(spec, GAUDI2, {}) == []


def test_lazy_mode_from_the_checklist_fixes_conflicts_with_compile() -> None:
    spec = prepare(JobSpec(torch_compile=True), GAUDI2, env_fixes={"PT_HPU_LAZY_MODE": "1"})
    assert "torch_compile" in {p.field for p in validate(spec, GAUDI2, {})}


def test_eight_bit_on_gaudi_is_refused() -> None:
    assert (
        "no 8-bit kernels for Gaudi"
        in problems(JobSpec(lora=True, quantization="int8"), GAUDI2)["quantization"]
    )


def test_qlora_on_gaudi1_is_refused_but_fine_on_gaudi2() -> None:
    assert "needs Gaudi 2 or 3" in problems(PRESETS["QLoRA"], GAUDI1)["quantization"]
    assert problems(PRESETS["QLoRA"], GAUDI2) == {}


def test_quantized_weights_need_lora() -> None:
    assert "turn lora on" in problems(JobSpec(quantization="nf4"))["lora"]


@pytest.mark.parametrize(
    ("changes", "field", "text"),
    [
        ({"batch_size": 0}, "batch_size", "0 is not between 1 and 65536"),
        ({"learning_rate": 5.0}, "learning_rate", "5 is not between 0 and 1"),
        ({"max_steps": -3}, "max_steps", "negative"),
        ({"max_steps": 0, "epochs": 0.0}, "epochs", "not between 0 and 10000"),
        ({"max_seq_len": 4}, "max_seq_len", "not between 8"),
        ({"warmup_steps": 500, "max_steps": 100}, "warmup_steps", "more than max_steps"),
        ({"lora": True, "lora_dropout": 1.5}, "lora_dropout", "not in [0, 1)"),
        ({"eval_split": 0.9}, "eval_split", "not between 0 and 0.5"),
        ({"eval_split": 0.1}, "eval_steps", "eval_split is set but eval_steps is 0"),
        ({"processes": 0}, "processes", "not between 1 and 64"),
        ({"grad_accum": 0}, "grad_accum", "not between 1 and 4096"),
        ({"logging_steps": 0}, "logging_steps", "at least 1"),
    ],
)
def test_nonsense_numbers_are_refused(changes: dict, field: str, text: str) -> None:
    assert text in problems(JobSpec(**changes))[field]


def test_sequences_longer_than_the_model_allows() -> None:
    limit = json.loads((model_dir() / "config.json").read_text())["max_position_embeddings"]
    found = problems(JobSpec(max_seq_len=limit + 1))["max_seq_len"]
    assert found == f"{limit + 1} is longer than the model's {limit} positions"
    assert "max_seq_len" not in problems(JobSpec(max_seq_len=limit))


def test_too_many_processes_for_this_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert "this machine has 2 CPU cores" in problems(JobSpec(processes=3))["processes"]


def test_accelerate_cannot_run_several_cpu_processes() -> None:
    assert "use torchrun" in problems(JobSpec(processes=2, launcher="accelerate"))["launcher"]


def test_cpu_uses_torchrun_for_two_processes() -> None:
    spec = prepare(JobSpec(processes=2), CPU)
    assert (spec.launcher, spec.processes, spec.cards, spec.device) == ("torchrun", 2, (), "cpu")


def test_a_device_the_machine_lacks_is_refused() -> None:
    assert "this machine runs on cpu" in problems(JobSpec(device="hpu"))["device"]


def test_missing_dataset_file() -> None:
    assert "does not exist: check the path" in problems(JobSpec(dataset="/no/such/data.jsonl"))["dataset"]


def test_hub_dataset_while_offline_says_so() -> None:
    found = problems(JobSpec(dataset="someone/some-dataset"))["dataset"]
    assert "the Hub is offline (HF_HUB_OFFLINE=1)" in found


def test_missing_text_field_in_each_format(tmp_path: Path) -> None:
    rows = [{"prompt": "hello", "answer": "world"}]
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows))
    csv = tmp_path / "d.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    parquet = tmp_path / "d.parquet"
    pd.DataFrame(rows).to_parquet(parquet)
    for path in (jsonl, csv, parquet):
        found = problems(JobSpec(dataset=str(path)))["dataset"]
        assert "no " in found and "'text'" in found and "prompt, answer" in found, found
        assert problems(JobSpec(dataset=str(path), text_field="answer")) == {}


def test_unknown_file_format(tmp_path: Path) -> None:
    path = tmp_path / "data.xlsx"
    path.write_bytes(b"PK")
    assert "unknown format .xlsx" in problems(JobSpec(dataset=str(path)))["dataset"]


def test_model_folder_without_config(tmp_path: Path) -> None:
    assert "no config.json" in problems(JobSpec(model=str(tmp_path)))["model"]


def test_hub_model_not_cached_while_offline() -> None:
    assert (
        "not in the local cache and the Hub is offline" in problems(JobSpec(model="Qwen/Qwen3-0.6B"))["model"]
    )
