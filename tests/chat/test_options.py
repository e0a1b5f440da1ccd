"""Load options and generation parameters: what each accelerator allows, and input checking."""

from __future__ import annotations

import pytest

from gaudi_tui.core.chat.options import (
    GAUDI_BNB_REASON,
    GenerationParams,
    LoadOptions,
    quantization_unavailable,
    resolve_dtype,
)


@pytest.mark.parametrize("quant", ["fp4", "int8"])
def test_gaudi_refuses_8bit_and_fp4_with_the_reason(quant: str) -> None:
    assert quantization_unavailable("hpu", quant) == GAUDI_BNB_REASON  # type: ignore[arg-type]
    assert "NF4" in GAUDI_BNB_REASON
    assert quantization_unavailable("cpu", quant) is None  # type: ignore[arg-type]
    assert quantization_unavailable("cuda", quant) is None  # type: ignore[arg-type]


def test_nf4_and_none_run_everywhere() -> None:
    for kind in ("hpu", "cuda", "cpu"):
        assert quantization_unavailable(kind, "nf4") is None  # type: ignore[arg-type]
        assert quantization_unavailable(kind, "none") is None  # type: ignore[arg-type]


def test_auto_dtype_is_the_accelerators() -> None:
    assert resolve_dtype("auto", "bfloat16") == "bfloat16"
    assert resolve_dtype("float32", "bfloat16") == "float32"


def test_load_options_defaults_and_checks() -> None:
    options = LoadOptions()
    assert (options.model, options.dtype, options.quantization) == ("demo", "auto", "none")
    assert options.trust_remote_code is False and options.compile is False
    assert LoadOptions(model="  ").model == "demo"
    assert LoadOptions.from_dict({**options.to_dict(), "unknown": 1}) == options
    with pytest.raises(ValueError, match="quantization must be one of"):
        LoadOptions(quantization="int4")  # type: ignore[arg-type]


def test_parse_names_every_bad_field() -> None:
    with pytest.raises(ValueError) as caught:
        GenerationParams.parse({"max_new_tokens": "many", "temperature": "0", "top_p": "2", "seed": "x"})
    text = str(caught.value)
    assert "max_new_tokens must be a whole number, not 'many'" in text
    assert "seed must be a whole number" in text
    assert "top_p" not in text  # range checks run once the numbers parse


def test_parse_range_checks_and_empty_seed() -> None:
    with pytest.raises(ValueError, match="temperature must be above 0") as caught:
        GenerationParams.parse({"temperature": "0", "top_p": "1.5"})
    assert "top_p must be above 0 and at most 1" in str(caught.value)
    params = GenerationParams.parse({"max_new_tokens": "64", "seed": " "}, do_sample=True)
    assert (params.max_new_tokens, params.seed, params.do_sample) == (64, None, True)


def test_greedy_leaves_sampling_knobs_out() -> None:
    greedy = GenerationParams(temperature=0.3).generate_kwargs()
    assert greedy == {"max_new_tokens": 256, "do_sample": False, "repetition_penalty": 1.0}
    sampled = GenerationParams(do_sample=True, top_k=5).generate_kwargs()
    assert (sampled["temperature"], sampled["top_p"], sampled["top_k"]) == (0.7, 0.9, 5)


def test_engine_environment_for_gaudi_and_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from gaudi_tui.core import paths
    from gaudi_tui.core.chat.engine.loader import engine_env

    for name in (
        "PT_ENABLE_INT64_SUPPORT",
        "PT_HPU_METRICS_FILE",
        "HABANA_PT_METRICS_FILE",
        "PT_HPU_METRICS_DUMP_TRIGGERS",
    ):
        monkeypatch.delenv(name, raising=False)
    chat = paths.state_dir() / "chat"
    chat.mkdir(parents=True, exist_ok=True)
    (chat / "hpu_metrics-999999999.json").write_text("[")  # an engine long gone
    assert engine_env(LoadOptions(compile=True), habana_installed=True) == {
        "TOKENIZERS_PARALLELISM": "false",
        "PT_ENABLE_INT64_SUPPORT": "1",
        # the runtime's metrics file: graphs compiled in the warm-up and per answer
        "PT_HPU_METRICS_FILE": str(chat / f"hpu_metrics-{os.getpid()}.json"),
        "PT_HPU_METRICS_DUMP_TRIGGERS": "process_exit,metric_change",
        "PT_HPU_LAZY_MODE": "0",  # torch.compile with hpu_backend needs eager mode, set before import
    }
    assert not (chat / "hpu_metrics-999999999.json").exists()
    monkeypatch.setenv("PT_HPU_METRICS_FILE", "/data/mine.json")  # the user's own: kept, not replaced
    assert "PT_HPU_METRICS_FILE" not in engine_env(LoadOptions(), habana_installed=True)
    assert engine_env(LoadOptions(), habana_installed=False) == {"TOKENIZERS_PARALLELISM": "false"}
