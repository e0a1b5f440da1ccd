"""Loading a causal LM inside the engine child: where it comes from, how it is placed, warm-up, memory.

Runs only in the engine process (it imports torch and transformers and may acquire a card).
Every refusal is a `ChatError` whose message says what happened, why and what to do.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import re
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gaudi_tui.core import accelerator as accel_mod
from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.chat.errors import ChatError, first_line
from gaudi_tui.core.chat.metrics import LoadReport, MemoryReport
from gaudi_tui.core.chat.options import QUANTIZATIONS, LoadOptions, quantization_unavailable, resolve_dtype

GENERATIVE_MARKS = ("CausalLM", "LMHead", "ConditionalGeneration")
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Source:
    """What `from_pretrained` gets: a local folder or a Hub id, and the name shown for it."""

    ref: str
    local: bool
    label: str


@dataclass
class Loaded:
    model: Any
    tokenizer: Any
    accelerator: Accelerator
    report: LoadReport


def engine_env(options: LoadOptions, habana_installed: bool) -> dict[str, str]:
    """Variables the engine sets before importing torch (Gaudi reads them once, at import)."""
    env: dict[str, str] = {"TOKENIZERS_PARALLELISM": "false"}
    if habana_installed:
        env["PT_ENABLE_INT64_SUPPORT"] = os.environ.get("PT_ENABLE_INT64_SUPPORT", "1")
    if options.compile:
        env["PT_HPU_LAZY_MODE"] = "0"  # torch.compile with hpu_backend needs eager mode
    return env


def detect_accelerator() -> Accelerator:
    """The engine owns its card, so it may import the Gaudi plugin and probe in-process."""
    if importlib.util.find_spec("habana_frameworks") is not None:
        try:
            import habana_frameworks.torch  # noqa: F401
        except Exception:  # noqa: BLE001 - collect_facts reports why hpu is unusable
            pass
    return accel_mod.select(accel_mod.collect_facts())


def locate(name: str) -> Source:
    """Resolve "demo", a folder or a Hub id; refuse paths that do not exist."""
    from gaudi_tui.core import demo

    resolved = demo.resolve_model(name.strip())
    path = Path(resolved).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ChatError(
                "not_a_model",
                f"{path} is a file, not a model folder. Give the folder that holds config.json "
                "and the weights (what save_pretrained writes).",
            )
        if not (path / "config.json").is_file():
            raise ChatError(
                "not_a_model",
                f"{path} has no config.json, so it is not a Transformers model folder. Give the folder "
                "that save_pretrained wrote (config.json, weights and tokenizer files).",
            )
        label = demo.DEMO_LABEL if demo.is_demo_model(path) else path.name
        return Source(str(path), True, label)
    if resolved != name.strip():
        raise ChatError(
            "not_found",
            f"The {demo.DEMO_LABEL} folder {path} is missing from this installation. "
            "Rebuild it with `make demo-model`, or give another model.",
        )
    if _looks_like_path(name) or not HUB_ID.fullmatch(name.strip()):
        raise ChatError(
            "not_found",
            f"{path.absolute()} does not exist. Check the path, or give a Hub id such as Qwen/Qwen3-0.6B.",
        )
    return Source(name.strip(), False, name.strip())


def _looks_like_path(name: str) -> bool:
    text = name.strip()
    return text.startswith(("/", "~", ".", "\\")) or text.count("/") > 1 or os.sep in text.replace("/", "")


def load(options: LoadOptions, accelerator: Accelerator, progress: Progress) -> Loaded:
    """Load tokenizer and model on the accelerator (the engine then times a warm-up answer)."""
    source = locate(options.model)
    unavailable = quantization_unavailable(accelerator.kind, options.quantization)
    if unavailable:
        raise ChatError(
            "unavailable", f"{QUANTIZATIONS[options.quantization]} is not available on Gaudi: {unavailable}"
        )
    started = time.perf_counter()
    progress("reading config")
    config = _load_config(source, options.trust_remote_code)
    _require_causal_lm(source, config, options.trust_remote_code)
    progress("loading tokenizer")
    tokenizer = _load_tokenizer(source, options.trust_remote_code)
    progress("loading weights")
    model = _load_model(source, options, accelerator)
    if options.compile:
        import torch

        model.forward = torch.compile(model.forward, backend=accelerator.compile_backend, dynamic=True)
    load_s = time.perf_counter() - started
    report = LoadReport(
        label=source.label,
        source=source.ref,
        model_type=str(getattr(config, "model_type", "?")),
        parameters=int(model.num_parameters()),
        dtype=str(model.dtype).replace("torch.", ""),
        device=str(model.device),
        quantization=options.quantization if getattr(model, "hf_quantizer", None) else "none",
        compile_backend=accelerator.compile_backend if options.compile else None,
        chat_template=bool(getattr(tokenizer, "chat_template", None)),
        context_length=context_length(config, tokenizer),
        accelerator=accelerator.kind,
        accelerator_reason=accelerator.reason,
        load_s=round(load_s, 4),
        warmup_s=0.0,
    )
    return Loaded(model, tokenizer, accelerator, report)


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
