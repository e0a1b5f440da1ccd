"""Loading a causal LM inside the engine child: where it comes from, how it is placed, warm-up, memory.

Runs only in the engine process (it imports torch and transformers and may acquire a card).
Every refusal is a `ChatError` whose message says what happened, why and what to do.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gaudi_tui.core import accelerator as accel_mod
from gaudi_tui.core import paths
from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.chat import trained
from gaudi_tui.core.chat.engine import adapters
from gaudi_tui.core.chat.errors import ChatError, first_line
from gaudi_tui.core.chat.metrics import LoadReport, MemoryReport
from gaudi_tui.core.chat.options import (
    QUANTIZATIONS,
    LoadOptions,
    Quantization,
    quantization_unavailable,
    resolve_dtype,
)
from gaudi_tui.core.chat.trained import Resolved
from gaudi_tui.core.insight.runtime import file_from_env

GENERATIVE_MARKS = ("CausalLM", "LMHead", "ConditionalGeneration")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Source:
    """What `from_pretrained` gets for the config and the weights: a local folder or a Hub id."""

    ref: str
    local: bool
    label: str


@dataclass
class Loaded:
    model: Any
    tokenizer: Any
    accelerator: Accelerator
    report: LoadReport
    rows: tuple[str, ...] = (adapters.BASE_ROW,)
    """The adapter each model this engine serves answers with (`BASE_ROW`: the base alone)."""


def engine_env(options: LoadOptions, habana_installed: bool) -> dict[str, str]:
    """Variables the engine sets before importing torch (Gaudi reads them once, at import)."""
    env: dict[str, str] = {"TOKENIZERS_PARALLELISM": "false"}
    if habana_installed:
        env["PT_ENABLE_INT64_SUPPORT"] = os.environ.get("PT_ENABLE_INT64_SUPPORT", "1")
        if not file_from_env(os.environ):  # the runtime's metrics file: graphs compiled per answer
            env["PT_HPU_METRICS_FILE"] = str(metrics_file())
            env.setdefault(
                "PT_HPU_METRICS_DUMP_TRIGGERS",
                os.environ.get("PT_HPU_METRICS_DUMP_TRIGGERS", "process_exit,metric_change"),
            )
    if options.compile:
        env["PT_HPU_LAZY_MODE"] = "0"  # torch.compile with hpu_backend needs eager mode
    return env


def metrics_file() -> Path:
    """This engine's runtime metrics file; those of engines no longer running are removed."""
    import psutil

    folder = paths.state_dir() / "chat"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("hpu_metrics-*.json*"):
        pid = old.name.removeprefix("hpu_metrics-").split(".")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not psutil.pid_exists(int(pid)):
            old.unlink(missing_ok=True)
    return folder / f"hpu_metrics-{os.getpid()}.json"


def detect_accelerator() -> Accelerator:
    """The engine owns its card, so it may import the Gaudi plugin and probe in-process."""
    if importlib.util.find_spec("habana_frameworks") is not None:
        try:
            import habana_frameworks.torch  # noqa: F401
        except Exception:  # noqa: BLE001 - collect_facts reports why hpu is unusable
            pass
    return accel_mod.select(accel_mod.collect_facts())


def resolve(options: LoadOptions) -> tuple[Resolved, Resolved | None]:
    """The model (and the second one served by the same engine), refused before torch is imported
    when a path, a job, a base or an adapter is wrong."""
    if not options.compare:
        return trained.resolve(options.model), None
    first, second = trained.resolve_pair(options.model, options.compare)
    if options.merge or first.base_ref != second.base_ref or not (first.adapter or second.adapter):
        raise ChatError(
            "compare",
            f"{first.label} and {second.label} do not differ only by an adapter on one base, so one "
            "engine cannot serve both: compare them with two engines.",
        )
    return first, second


def quantization_for(first: Resolved, options: LoadOptions) -> Quantization:
    """A QLoRA adapter's base loads in 4-bit NF4, as it was trained, unless the user asked for
    the base in the accelerator's dtype."""
    if first.quantized_base == "nf4" and options.quantization == "none" and not options.base_in_dtype:
        return "nf4"
    return options.quantization


def load(options: LoadOptions, accelerator: Accelerator, progress: Progress) -> Loaded:
    """Load tokenizer and model on the accelerator, with its adapter(s); the engine then times a
    warm-up answer."""
    first, second = resolve(options)
    quantization = quantization_for(first, options)
    unavailable = quantization_unavailable(accelerator.kind, quantization)
    if unavailable:
        raise ChatError(
            "unavailable", f"{QUANTIZATIONS[quantization]} is not available on Gaudi: {unavailable}"
        )
    source = Source(first.base_ref, first.base_local, first.base_label)
    started = time.perf_counter()
    progress("reading config")
    config = _load_config(source, options.trust_remote_code)
    _require_causal_lm(source, config, options.trust_remote_code)
    progress("loading tokenizer")
    tokenizer = _load_tokenizer(_tokenizer_source(first, source), options.trust_remote_code)
    progress("loading weights")
    try:
        model = _load_model(source, replace(options, quantization=quantization), accelerator)
    except Exception as exc:
        if quantization == options.quantization:
            raise
        why = exc.message if isinstance(exc, ChatError) else f"{type(exc).__name__}: {exc}"
        raise _qlora_error(first, accelerator, why) from exc  # the NF4 base was our choice: say so
    rows: tuple[str, ...] = (adapters.BASE_ROW,)
    merged = False
    if first.adapter is not None or (second is not None and second.adapter is not None):
        progress("loading the adapter")
        model, rows = adapters.attach(model, [first, *([second] if second else [])], config)
        if options.merge:
            model = model.merge_and_unload()
            merged = True
    if options.compile:
        import torch

        model.forward = torch.compile(model.forward, backend=accelerator.compile_backend, dynamic=True)
    load_s = time.perf_counter() - started
    provenances = tuple(r.provenance(merged) for r in [first, *([second] if second else [])])
    report = LoadReport(
        label=first.label,
        source=str(first.adapter or first.base_ref),
        model_type=str(getattr(config, "model_type", "?")),
        parameters=int(model.num_parameters()),
        dtype=str(model.dtype).replace("torch.", ""),
        device=str(model.device),
        quantization=quantization,  # from_pretrained refuses a quantization it cannot do
        compile_backend=accelerator.compile_backend if options.compile else None,
        chat_template=bool(getattr(tokenizer, "chat_template", None)),
        context_length=context_length(config, tokenizer),
        accelerator=accelerator.kind,
        accelerator_reason=accelerator.reason,
        load_s=round(load_s, 4),
        warmup_s=0.0,
        rows=provenances,
    )
    return Loaded(model, tokenizer, accelerator, report, rows)


def _tokenizer_source(first: Resolved, base: Source) -> Source:
    """A run saves the tokenizer it trained with next to the adapter; else the base's."""
    if first.adapter is not None and all((first.adapter / f).is_file() for f in TOKENIZER_FILES):
        return Source(str(first.adapter), True, first.label)
    return base


def _qlora_error(first: Resolved, accelerator: Accelerator, why: str) -> ChatError:
    return ChatError(
        "qlora_unavailable",
        f"{first.label} is a QLoRA adapter: it was trained on a 4-bit NF4 base, but bitsandbytes cannot "
        f"load one on this {accelerator.kind} ({first_line(why)}). Load its base unquantized in "
        f"{accelerator.dtype} instead (m: tick 'QLoRA base unquantized'; gaudi-tui chat --base-in-dtype); "
        "answers may differ slightly from what training saw.",
    )


def _load_config(source: Source, trust_remote_code: bool) -> Any:
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(source.ref, trust_remote_code=trust_remote_code)
    except Exception as exc:  # noqa: BLE001 - each cause gets its own message below
        raise _config_error(source, exc) from exc


def _config_error(source: Source, exc: Exception) -> ChatError:
    text = str(exc)
    if "trust_remote_code" in text:
        return ChatError(
            "remote_code",
            f"{source.label} ships its own model code, which gaudi-tui runs only if you allow it. "
            "If you trust this model's code, turn on 'trust remote code' for it in the load options.",
        )
    if not source.local:
        offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")
        if offline or "couldn't connect" in text.lower() or "offline" in text.lower():
            why = "the Hub is switched off (HF_HUB_OFFLINE=1)" if offline else "the Hub cannot be reached"
            return ChatError(
                "not_cached",
                f"{source.ref} is not in the local Hugging Face cache and {why}. On a machine with "
                f"network run `hf download {source.ref}` and copy the cache (~/.cache/huggingface), "
                "or give a local model folder.",
            )
        return ChatError(
            "not_found",
            f"{source.ref} was not found on the Hugging Face Hub ({first_line(text)}). Check the id; "
            "gated models need `hf auth login` first.",
        )
    return ChatError(
        "not_a_model",
        f"The config.json in {source.ref} cannot be read ({first_line(text)}). Is the folder complete?",
    )


def _require_causal_lm(source: Source, config: Any, trust_remote_code: bool) -> None:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    remote = trust_remote_code and "AutoModelForCausalLM" in (getattr(config, "auto_map", None) or {})
    architectures = list(getattr(config, "architectures", None) or [])
    # A saved BERT classifier has a causal class in the mapping too, but was not trained to generate.
    generative = not architectures or any(m in a for a in architectures for m in GENERATIVE_MARKS)
    if remote or (type(config) in MODEL_FOR_CAUSAL_LM_MAPPING and generative):
        return
    arch = ", ".join(architectures) or "no architectures listed"
    raise ChatError(
        "not_causal_lm",
        f"{source.label} is a {getattr(config, 'model_type', '?')} model ({arch}), not a causal "
        "language model, so it cannot chat. Choose a text-generation model that "
        "AutoModelForCausalLM loads (for example Qwen/Qwen3-0.6B).",
    )


def _load_tokenizer(source: Source, trust_remote_code: bool) -> Any:
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(source.ref, trust_remote_code=trust_remote_code)
        if not tokenizer("Hello")["input_ids"]:
            raise ValueError("it encodes text to nothing")
    except Exception as exc:  # noqa: BLE001 - a broken tokenizer fails in many ways
        raise ChatError(
            "tokenizer",
            f"The tokenizer of {source.label} cannot be used ({first_line(f'{type(exc).__name__}: {exc}')}). "
            "Its files (tokenizer.json, tokenizer_config.json, …) are missing or broken: copy them "
            "again from the original model.",
        ) from exc
    return tokenizer


def _load_model(source: Source, options: LoadOptions, accelerator: Accelerator) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    dtype = getattr(torch, resolve_dtype(options.dtype, accelerator.dtype))
    kwargs: dict[str, Any] = {
        "dtype": dtype,
        "device_map": accelerator.device_map,
        "trust_remote_code": options.trust_remote_code,
    }
    if options.quantization != "none":
        kwargs["quantization_config"] = _bnb_config(options, dtype)
        if accelerator.kind == "cpu":
            kwargs["device_map"] = {"": "cpu"}  # bitsandbytes' CPU backend wants an explicit map
    model = AutoModelForCausalLM.from_pretrained(source.ref, **kwargs)
    model.eval()
    return model


def _bnb_config(options: LoadOptions, compute_dtype: Any) -> Any:
    if importlib.util.find_spec("bitsandbytes") is None:
        raise ChatError(
            "unavailable",
            f"{QUANTIZATIONS[options.quantization]} needs bitsandbytes, which is not installed: "
            "pip install bitsandbytes",
        )
    from transformers import BitsAndBytesConfig

    if options.quantization == "int8":
        return BitsAndBytesConfig(load_in_8bit=True)
    return BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type=options.quantization,
        bnb_4bit_compute_dtype=compute_dtype,
        bnb_4bit_use_double_quant=True,
    )


def pad_token_id(tokenizer: Any) -> int | None:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def context_length(config: Any, tokenizer: Any) -> int | None:
    for value in (
        getattr(config, "max_position_embeddings", None),
        getattr(tokenizer, "model_max_length", None),
    ):
        if isinstance(value, int) and 0 < value < 10**7:
            return value
    return None


def memory_report(kind: str) -> MemoryReport:
    """Device memory of this process (see MemoryReport); the engine calls it after load and each answer."""
    import psutil

    rss = psutil.Process().memory_info().rss
    if kind == "hpu":
        import torch

        stats = torch.hpu.memory_stats()  # type: ignore[attr-defined]  # habana_frameworks adds torch.hpu on import
        return MemoryReport("hpu", stats.get("InUse"), stats.get("MaxInUse"), stats.get("Limit"), rss)
    if kind == "cuda":
        import torch

        total = torch.cuda.get_device_properties(0).total_memory
        return MemoryReport(
            "cuda", torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated(), total, rss
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return MemoryReport("cpu", rss, max(peak, rss), psutil.virtual_memory().total, rss)


def unload(loaded: Loaded | None) -> None:
    """Drop the model and give cached device memory back (Gaudi frees its card only at exit)."""
    if loaded is None:
        return
    kind = loaded.accelerator.kind
    del loaded.model, loaded.tokenizer
    gc.collect()
    if kind == "cuda":
        import torch

        torch.cuda.empty_cache()
