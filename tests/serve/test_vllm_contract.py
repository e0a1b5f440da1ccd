"""The vLLM command line and environment, against vllm-gaudi's documented flags and knobs (there is no
vLLM here: docs/configuration/env_variables.md and the `vllm serve` CLI, see core/jobs/kinds/serve_engines.py),
and the serve settings' checks: nothing the user types reaches the server unchecked, and the API key
never appears in the argv, the spec or the status."""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import control, launch
from gaudi_tui.core.jobs.kinds import serve_engines, serve_kind
from gaudi_tui.core.jobs.spec import JobSpec, SpecError, from_mapping, preset, to_toml
from tests.jobs.conftest import GAUDI2


def gaudi_spec(**values: object) -> JobSpec:
    """A serve spec as the local target prepares it on an 8-card Gaudi 2 (cards, HABANA_VISIBLE_MODULES)."""
    spec = from_mapping({"serve_engine": "vllm", **values}, base=preset("serve a model"))
    return serve_kind.KIND.prepare(launch.prepare(spec, GAUDI2))


def test_vllm_serves_on_the_chosen_cards_with_tensor_parallel() -> None:
    spec = gaudi_spec(cards="0,1", serve_port=8001, serve_args="--max-model-len 4096")
    assert serve_engines.argv(spec, "/models/llama") == [
        "vllm", "serve", "/models/llama", "--host", "127.0.0.1", "--port", "8001",
        "--tensor-parallel-size", "2", "--max-model-len", "4096",
    ]  # fmt: skip
    assert spec.env["HABANA_VISIBLE_MODULES"] == "0,1"


def test_vllm_serves_an_adapter_with_its_lora_flags() -> None:
    spec = gaudi_spec(cards="3", serve_port=8002, trust_remote_code=True)
    words = serve_engines.argv(spec, "Qwen/Qwen3-0.6B", ("LoRA-5f21-final-model", Path("/runs/x/model")))
    assert words[words.index("--tensor-parallel-size") + 1] == "1"
    assert words[-4:] == [
        "--trust-remote-code", "--enable-lora", "--lora-modules", "LoRA-5f21-final-model=/runs/x/model",
    ]  # fmt: skip


def test_the_id_requests_name_is_the_adapter_the_served_name_or_the_model() -> None:
    spec = gaudi_spec()
    assert serve_engines.served_id(spec, "/m") == "/m"
    assert serve_engines.served_id(spec, "/m", ("tuned", Path("/a"))) == "tuned"
    assert (
        serve_engines.served_id(gaudi_spec(serve_args="--served-model-name llama --seed 1"), "/m") == "llama"
    )
    assert serve_engines.served_id(gaudi_spec(serve_args="--served-model-name=llama"), "/m") == "llama"
    assert serve_engines.served_id(gaudi_spec(serve_engine="transformers"), "/m") == "/m"


def test_the_gaudi_knobs_are_set_and_the_users_own_win(gaudi_home: Path) -> None:
    spec = gaudi_spec(serve_model="meta-llama/Llama-3.1-8B")
    assert spec.env["PT_HPU_LAZY_MODE"] == "0"  # vllm-gaudi's default: eager / torch.compile
    cache, delete, size = spec.env["PT_HPU_RECIPE_CACHE_CONFIG"].split(",")
    assert Path(cache).is_relative_to(gaudi_home) and Path(cache).name == "meta-llama-Llama-3.1-8B"
    assert (delete, size) == (
        "false",
        str(serve_engines.RECIPE_CACHE_MB),
    )  # kept: the next warm-up reuses recipes
    own = gaudi_spec(env={"PT_HPU_LAZY_MODE": "1", "PT_HPU_RECIPE_CACHE_CONFIG": "/mine,true,100"})
    assert own.env["PT_HPU_LAZY_MODE"] == "1" and own.env["PT_HPU_RECIPE_CACHE_CONFIG"] == "/mine,true,100"


@pytest.mark.parametrize(
    ("values", "field", "says"),
    [
        ({"serve_args": "--port 9"}, "serve_args", "--port is set by the panel: use serve_port"),
        ({"serve_args": "--api-key=s3cret"}, "serve_args", "a key on the command line is seen"),
        ({"serve_args": "-tp 4"}, "serve_args", "use cards"),
        # M6: as vLLM's argparse reads them: `_` for `-`, a prefix, a config file that sets them all
        ({"serve_args": "--api_key=s3cret"}, "serve_args", "a key on the command line is seen"),
        ({"serve_args": "--tensor_parallel_size=8"}, "serve_args", "use cards"),
        ({"serve_args": "--po 9"}, "serve_args", "--port is set by the panel: use serve_port"),
        ({"serve_args": "--host=0.0.0.0"}, "serve_args", "use serve_host"),
        ({"serve_args": "--config vllm.yaml"}, "serve_args", "--config is refused: a config file can set"),
        ({"serve_host": "-h"}, "serve_host", "is not an IP address or a host name"),
        ({"serve_host": "a b"}, "serve_host", "is not an IP address or a host name"),
        ({"serve_port": 80}, "serve_port", "is not a port from 1024 to 65535"),
        ({"serve_port": 70000}, "serve_port", "is not a port from 1024 to 65535"),
        ({"env": "VLLM_GRAPH_RESERVED_MEM=10"}, "env", "is not a fraction between 0 and 1"),
        ({"env": "VLLM_BUCKETING_STRATEGY=linear"}, "env", "is not one of exp, lin, pad"),
        ({"serve_api_key_env": "MY KEY"}, "serve_api_key_env", "is not an environment variable name"),
        ({"serve_api_key_env": "NOT_SET_HERE"}, "serve_api_key_env", "is not set: export it"),
        ({"env": {"VLLM_API_KEY": "s3cret"}}, "env", "VLLM_API_KEY looks like a secret"),
    ],
)
def test_bad_serve_settings_are_refused_naming_the_setting(values: dict, field: str, says: str) -> None:
    spec = gaudi_spec(**values)
    problems = [p for p in serve_engines.problems(spec, {"PATH": os.defpath}) if p.field == field]
    assert problems and says in problems[0].message, problems


def test_vllm_missing_or_on_cpu_is_refused_with_what_to_do(cpu_accelerator) -> None:  # noqa: ANN001
    spec = from_mapping({"serve_engine": "vllm", "device": "cpu"}, base=preset("serve a model"))
    _, problems = control.check(spec, cpu_accelerator, env={"PATH": os.defpath})
    said = " | ".join(p.message for p in problems if p.field == "serve_engine")
    assert "vllm serves on Gaudi (hpu) here, not on cpu" in said
    assert "the vllm command is not installed" in said and "choose serve_engine=transformers" in said


def test_auto_is_vllm_on_gaudi_when_its_command_is_installed(tmp_path: Path) -> None:
    program = tmp_path / "vllm"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    spec = replace(from_mapping({"device": "hpu"}, base=preset("serve a model")))
    assert serve_engines.choose(spec, {"PATH": str(tmp_path)}) == "vllm"
    assert serve_engines.choose(spec, {"PATH": os.defpath}) == "transformers"
    assert serve_engines.choose(replace(spec, device="cpu"), {"PATH": str(tmp_path)}) == "transformers"


def test_the_api_key_goes_by_its_variables_name_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_VLLM_KEY", "s3cret-value")
    spec = gaudi_spec(serve_api_key_env="MY_VLLM_KEY", serve_port=8003)
    assert not [p for p in serve_engines.problems(spec, os.environ) if p.field == "serve_api_key_env"]
    assert "s3cret-value" not in " ".join(serve_engines.argv(spec, "m")) and "s3cret-value" not in to_toml(
        spec
    )
    assert (
        serve_engines.API_KEY_VAR == "VLLM_API_KEY"
    )  # vLLM's documented variable, set in the supervisor only


def test_transformers_serve_takes_one_card_and_no_key() -> None:
    spec = gaudi_spec(serve_engine="transformers", cards="0,1", serve_api_key_env="HOME")
    fields = {p.field: p.message for p in serve_engines.problems(spec, os.environ)}
    assert "transformers serve takes no API key" in fields["serve_api_key_env"]
    assert "serve_engine=vllm for tensor parallel" in fields["cards"]
    words = serve_engines.argv(replace(spec, cards=(0,)), "/m")
    assert words[1:5] == ["-m", "transformers.cli.transformers", "serve", "/m"]
    assert words[words.index("--device") + 1] == "hpu" and "--no-trust-remote-code" in words


def test_engine_args_are_typed_as_in_a_shell_and_never_run_one() -> None:
    spec = from_mapping(
        {"serve_args": "--chat-template 'a b.jinja' --max-num-seqs 8"}, base=preset("serve a model")
    )
    assert spec.serve_args == ("--chat-template", "a b.jinja", "--max-num-seqs", "8")
    with pytest.raises(SpecError, match="serve_args: .*close the quote"):
        from_mapping({"serve_args": "--x 'open"})
