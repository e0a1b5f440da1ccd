"""What a serve job's `serve_model` stands for, as `core/chat/trained.py` resolves it for Chat:
'demo', a model folder, an adapter or checkpoint folder, a job id (its final `model/`, else its
newest complete checkpoint), or a Hub id. A full model is served as it is; an adapter is served on
its base (vLLM's LoRA, or a merged copy for `transformers serve`: `merge.py`).

Before anything starts, the architecture in config.json is checked: a model saved by optimum-habana's
GaudiTrainer names `GaudiLlamaForCausalLM`, which neither vLLM nor Transformers knows (HabanaAI/vllm-fork
issue 511: "Model architectures ['GaudiLlamaForCausalLM'] are not supported for now"); it is refused
with the one-line fix.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from gaudi_tui.core.chat import trained
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.untrusted.files import load_json

GAUDI_PREFIX = "Gaudi"
CONFIG_LIMIT = 16 << 20
"""The most a model's config.json may hold (the largest are tens of KiB)."""


class ServeRefused(ValueError):
    """The model cannot be served; the message says why and what to do."""


@dataclass(frozen=True)
class Served:
    load: str
    """What the server loads: a folder here, or a Hub id."""
    label: str
    adapter: Path | None = None
    """A PEFT adapter to serve on `load` (its base)."""

    @property
    def adapter_name(self) -> str:
        """The name requests use for the adapter under vLLM's --lora-modules."""
        return re.sub(r"[^A-Za-z0-9._-]+", "-", self.label).strip("-") or "adapter"


def resolve(name: str) -> Served:
    """`name` as the server will load it, or ServeRefused."""
    if name.startswith("-"):
        raise ServeRefused(f"{name!r} starts with '-': a model is a folder, a job id or a Hub id, not a flag")
    if any(ch in name for ch in "\0\n\r"):
        raise ServeRefused("the model name holds a NUL or a line break")
    try:
        found = trained.resolve(name)
    except ChatError as exc:
        raise ServeRefused(exc.message) from None
    if found.base_local and (why := architecture_problem(Path(found.base_ref))) is not None:
        raise ServeRefused(why)
    return Served(found.base_ref, found.label, found.adapter)


def architecture_problem(folder: Path) -> str | None:
    """Why the model in `folder` cannot be served by its config.json's architectures, or None."""
    config = folder / "config.json"
    try:
        data = load_json(config, limit=CONFIG_LIMIT)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"{config} cannot be read ({exc}): copy the model again"
    names = data.get("architectures") if isinstance(data, dict) else None
    if not isinstance(names, list) or not names:
        return None  # the engine decides from model_type
    gaudi = [
        n for n in names if isinstance(n, str) and n.startswith(GAUDI_PREFIX) and len(n) > len(GAUDI_PREFIX)
    ]
    if gaudi:
        fixed = [n[len(GAUDI_PREFIX) :] if n in gaudi else n for n in names]
        return (
            f"{config} names the architecture {gaudi[0]}, the training-time class of optimum-habana's "
            f"GaudiTrainer, which vLLM and Transformers do not know (HabanaAI/vllm-fork issue 511). Fix: set "
            f'"architectures": {json.dumps(fixed)} in that config.json (the weights are the same), then serve again'
        )
    return None
