"""PEFT adapters inside the engine: put one or two on a loaded base, and say clearly why one does not fit.

Runs only in the engine process (imports peft). Two models that differ only by an adapter share one
base: each adapter gets its own name, and a generation picks per row which one answers
(`BASE_ROW` switches the adapter off).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gaudi_tui.core.chat.errors import ChatError, first_line
from gaudi_tui.core.chat.trained import Resolved

BASE_ROW = "__base__"
"""PEFT's adapter name for "no adapter" in a mixed batch (`generate(adapter_names=...)`)."""
NAMES = ("tuned", "other")
"""The names the engine gives the adapters of its first and second model."""
CORRUPT_MARKS = ("safetensor", "header", "deserializ", "invalid load key", "unpickling", "eof")
MISMATCH_MARKS = ("size mismatch", "target modules", "not found in the base model", "shape")


def attach(model: Any, models: Sequence[Resolved], config: Any) -> tuple[Any, tuple[str, ...]]:
    """Wrap `model` in a PeftModel carrying the adapter of each of `models` that has one; returns it
    and, per model, the adapter name that answers for it."""
    from peft import PeftModel

    rows: list[str] = []
    peft_model: Any = None
    for name, wanted in zip(NAMES, models, strict=False):
        if wanted.adapter is None:
            rows.append(BASE_ROW)
            continue
        try:
            if peft_model is None:
                peft_model = PeftModel.from_pretrained(model, str(wanted.adapter), adapter_name=name)
            else:
                peft_model.load_adapter(str(wanted.adapter), adapter_name=name)
        except Exception as exc:  # noqa: BLE001 - PEFT, safetensors and torch raise many types
            raise explain(wanted, config, exc) from exc
        rows.append(name)
    assert peft_model is not None, "attach() needs a model with an adapter"
    peft_model.set_adapter(next(r for r in rows if r != BASE_ROW))
    peft_model.eval()
    return peft_model, tuple(rows)


def explain(wanted: Resolved, config: Any, exc: BaseException) -> ChatError:
    """Why the adapter of `wanted` could not be put on its base."""
    text = first_line(f"{type(exc).__name__}: {exc}")
    lowered = text.lower()
    if any(mark in lowered for mark in MISMATCH_MARKS):
        model_type = getattr(config, "model_type", "?")
        return ChatError(
            "adapter_mismatch",
            f"The adapter in {wanted.adapter} does not fit {wanted.base_label} (a {model_type} model): "
            f"{text}. It was trained for another architecture; load it on the model it was trained on "
            "(base_model_name_or_path in adapter_config.json).",
        )
    if any(mark in lowered for mark in CORRUPT_MARKS):
        return ChatError(
            "adapter_corrupt",
            f"The adapter weights in {wanted.adapter} cannot be read ({text}): the file is damaged or "
            "was cut short. Copy the adapter again, or use an earlier checkpoint.",
        )
    return ChatError(
        "adapter_failed",
        f"The adapter in {wanted.adapter} could not be put on {wanted.base_label}: {text}.",
    )
