"""The job spec: presets, `--set` coercion, TOML round trip, clear errors for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs import spec_fields
from gaudi_tui.core.jobs.spec import PRESETS, JobSpec, SpecError


def test_presets_are_demo_lora_qlora_your_command_and_serve() -> None:
    assert list(PRESETS) == ["demo fine-tune", "LoRA", "QLoRA", "your command", "serve a model"]
    assert PRESETS["your command"].kind == "command" and PRESETS["demo fine-tune"].kind == "trainer"
    assert (
        PRESETS["serve a model"].kind == "serve"
        and spec_mod.preset("Serve a model") == PRESETS["serve a model"]
    )
    assert not PRESETS["demo fine-tune"].uses_lora
    assert PRESETS["LoRA"].lora and PRESETS["LoRA"].quantization == "none"
    assert PRESETS["QLoRA"].lora and PRESETS["QLoRA"].quantization == "nf4"


@pytest.mark.parametrize(
    ("name", "preset"), [("demo", "demo fine-tune"), ("lora", "LoRA"), ("Q-LoRA", "QLoRA")]
)
def test_preset_names_are_forgiving(name: str, preset: str) -> None:
    assert spec_mod.preset(name) == PRESETS[preset]


def test_unknown_preset_lists_the_presets() -> None:
    with pytest.raises(SpecError, match="demo fine-tune, LoRA, QLoRA"):
        spec_mod.preset("sft")


def test_overrides_are_coerced_to_each_fields_type() -> None:
    spec = spec_mod.with_overrides(
        JobSpec(),
        [
            "max_steps=50",
            "learning_rate=3e-4",
            "lora=yes",
            "lora_target_modules=q_proj, k_proj ,v_proj",
            "cards=0,1",
            "lr_scheduler=cosine",
            "env=PT_HPU_LAZY_MODE=0,FOO=bar",
        ],
    )
    assert spec.max_steps == 50
    assert spec.learning_rate == pytest.approx(3e-4)
    assert spec.lora is True
    assert spec.lora_target_modules == ("q_proj", "k_proj", "v_proj")
    assert spec.cards == (0, 1)
    assert spec.lr_scheduler == "cosine"
    assert spec.env == {"PT_HPU_LAZY_MODE": "0", "FOO": "bar"}


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("max_step=5", "unknown setting 'max_step' (did you mean 'max_steps'?)"),
        ("max_steps=five", "max_steps: 'five' is not a whole number"),
        ("learning_rate=fast", "learning_rate: 'fast' is not a number"),
        ("bf16=maybe", "bf16: 'maybe' is not true or false"),
        ("quantization=fp4", "quantization: 'fp4' is not one of none, nf4, int8"),
        ("cards=0,x", "cards: 'x' is not a whole number"),
        ("max_steps", "--set wants KEY=VALUE"),
    ],
)
def test_bad_overrides_say_what_is_wrong(pair: str, message: str) -> None:
    with pytest.raises(SpecError) as err:
        spec_mod.with_overrides(JobSpec(), [pair])
    assert message in str(err.value)


def test_toml_round_trip_of_every_preset(tmp_path: Path) -> None:
    for preset in PRESETS.values():
        path = tmp_path / "spec.toml"
        path.write_text(spec_mod.to_toml(preset))
        assert spec_mod.load(path) == preset


TEXT = st.characters(exclude_categories=["Cs"])  # lone surrogates cannot be written as UTF-8 at all


@given(
    name=st.text(TEXT, min_size=1, max_size=40),
    env=st.dictionaries(st.text(TEXT, min_size=1, max_size=10), st.text(TEXT, max_size=20), max_size=3),
    modules=st.lists(st.text(alphabet="abcdefghij_", min_size=1, max_size=8), max_size=4),
)
def test_toml_round_trip_keeps_any_text(name: str, env: dict[str, str], modules: list[str]) -> None:
    spec = JobSpec(name=name.strip() or "x", env=env, lora_target_modules=tuple(modules))
    assert spec_mod.from_toml(spec_mod.to_toml(spec)) == spec


def test_a_broken_toml_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "spec.toml"
    path.write_text("max_steps = = 3\n")
    with pytest.raises(SpecError, match=r"spec\.toml: not valid TOML"):
        spec_mod.load(path)
    with pytest.raises(SpecError, match="cannot read the spec"):
        spec_mod.load(tmp_path / "missing.toml")


def test_every_field_has_help_for_the_form() -> None:
    assert all(spec_mod.field_help(name) for name in spec_mod.field_names())


def test_a_command_is_typed_as_in_a_shell_and_kept_as_a_list() -> None:
    spec = spec_mod.with_overrides(JobSpec(), ["kind=command", "command=torchrun train.py --note 'a b,c'"])
    assert spec.command == ("torchrun", "train.py", "--note", "a b,c")
    assert spec_mod.display("command", spec.command) == "torchrun train.py --note 'a b,c'"
    assert spec_mod.from_toml(spec_mod.to_toml(spec)) == spec
    with pytest.raises(SpecError, match="close the quote"):
        spec_mod.with_overrides(JobSpec(), ["command=train.py 'open"])
    assert spec_fields.applies("command", "command") and not spec_fields.applies("command", "trainer")
    assert not spec_fields.applies("lora", "command") and spec_fields.applies("cards", "command")


def test_the_field_groups_name_every_setting_once_and_split_by_kind_and_target() -> None:
    names = spec_mod.field_names()
    groups = (spec_fields.COMMAND_FIELDS, spec_fields.TRAINER_FIELDS, spec_fields.RAY_FIELDS)
    assert set().union(*groups, spec_fields.SLURM_FIELDS, spec_fields.ADVANCED) <= set(names)
    assert not set(spec_fields.RAY_FIELDS) & set(spec_fields.SLURM_FIELDS)
    assert spec_fields.applies("slurm_nodes", "command", "slurm")
    assert not spec_fields.applies("slurm_nodes", "command", "ray")
    assert not spec_fields.applies("ray_address", "trainer", "local")
    assert not spec_fields.applies("ray_workdir", "trainer", "ray")  # a command's setting on Ray
    assert spec_fields.applies("ray_workdir", "command", "ray")
    main, advanced = spec_fields.form_order(names)
    assert sorted((*main, *advanced)) == sorted(names)
    command_main = [n for n in main if spec_fields.applies(n, "command", "local")]
    assert command_main[:2] == ["command", "workdir"] and "slurm_partition" not in command_main
    trainer_main = [n for n in main if spec_fields.applies(n, "trainer", "local")]
    assert trainer_main[:2] == ["model", "dataset"]
