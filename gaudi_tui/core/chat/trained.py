"""What a model name stands for, including what training produces: a PEFT adapter folder, a Trainer
`checkpoint-N` folder, or a run given by its id (its final model, else its newest complete checkpoint:
`run_answer.py`).

Torch-free: the panel, `gaudi-tui chat` and the engine (before it imports torch) resolve a name the
same way. Every refusal is a `ChatError` whose message says what was looked for, where, and what to do.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from gaudi_tui.core import demo
from gaudi_tui.core.chat import run_answer
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.protocol import known_fields
from gaudi_tui.core.untrusted.files import load_json

BASE = "base"
"""As the second model of a comparison: the first one's base model, without its adapter."""
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
DEMO_TAIL = ("gaudi_tui", "core", "demo", "model")
"""A demo base recorded by another installation (another checkout's path) is this one's demo model."""


@dataclass(frozen=True)
class Provenance:
    """Which weights answered: the base, and the adapter, run and checkpoint on top of it."""

    label: str
    base: str
    adapter: str | None = None
    run_id: str | None = None
    checkpoint: str | None = None
    merged: bool = False

    def summary(self) -> str:
        """`LoRA · 5f21 · checkpoint-30 (base demo model, adapter merged)`, or the model alone."""
        if self.adapter is None:
            return f"{self.label} (fine-tuned weights)" if self.run_id else self.label
        details = [f"base {self.base}"]
        if self.adapter is not None:
            details.append("adapter merged" if self.merged else "adapter")
        return f"{self.label} ({', '.join(details)})"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Provenance | None:
        return cls(**known_fields(cls, data)) if data else None


@dataclass(frozen=True)
class Resolved:
    """What `from_pretrained` gets for a name: the base (a folder or a Hub id), and the adapter folder
    to put on it, if any."""

    base_ref: str
    base_local: bool
    base_label: str
    label: str
    adapter: Path | None = None
    run_id: str | None = None
    checkpoint: str | None = None
    quantized_base: str = "none"
    """"nf4" when the run trained the adapter on a 4-bit NF4 base (QLoRA)."""

    def provenance(self, merged: bool = False) -> Provenance:
        return Provenance(
            self.label,
            self.base_label,
            None if self.adapter is None else str(self.adapter),
            self.run_id,
            self.checkpoint,
            merged and self.adapter is not None,
        )

    def base_only(self) -> Resolved:
        """The base model of this one, alone (a QLoRA adapter's still in 4-bit NF4)."""
        return Resolved(
            self.base_ref,
            self.base_local,
            self.base_label,
            self.base_label,
            quantized_base=self.quantized_base,
        )


def resolve(name: str) -> Resolved:
    """ "demo", a model folder, an adapter folder, a checkpoint, a run folder or id, or a Hub id."""
    text = name.strip() or demo.DEMO_MODEL_ID
    resolved = demo.resolve_model(text)
    path = Path(resolved).expanduser()
    if path.exists():
        return _local(path)
    if resolved != text:
        raise ChatError(
            "not_found",
            f"The {demo.DEMO_LABEL} folder {path} is missing from this installation. "
            "Rebuild it with `make demo-model`, or give another model.",
        )
    if not _looks_like_path(text) and "/" not in text:
        run = _find_run(text)
        if run is not None:
            return _from_run(run)
    if _looks_like_path(text) or not HUB_ID.fullmatch(text):
        raise ChatError(
            "not_found",
            f"{path.absolute()} does not exist. Check the path, give a job id (`gaudi-tui jobs` lists "
            "them), or a Hub id such as Qwen/Qwen3-0.6B.",
        )
    return Resolved(text, False, text, text)


def resolve_pair(first: str, second: str) -> tuple[Resolved, Resolved]:
    """The two models of a comparison; `second` may be "base" (the first one's base)."""
    a = resolve(first)
    if second.strip().lower() != BASE:
        return a, resolve(second)
    if a.adapter is None and a.run_id is None:
        raise ChatError(
            "no_base",
            f"{a.label} is not an adapter nor a trained job, so it has no separate base to compare "
            "with: give the second model by name.",
        )
    return a, a.base_only() if a.adapter is not None else _run_base(a)


def run_model(run_id: str) -> str:
    """The folder a run answers from now (for the Training screen): its `model/`, else its newest
    complete checkpoint."""
    run = _find_run(run_id)
    if run is None:
        raise ChatError("not_found", f"no job {run_id!r}: `gaudi-tui jobs` lists them")
    return str(run_answer.answer_folder(run))


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", "~", ".", "\\")) or text.count("/") > 1 or os.sep in text.replace("/", "")


def _local(path: Path) -> Resolved:
    if not path.is_dir():
        raise ChatError(
            "not_a_model",
            f"{path} is a file, not a model folder. Give the folder that holds config.json and the "
            "weights (what save_pretrained writes), an adapter folder, or a job id.",
        )
    if (path / ADAPTER_CONFIG).is_file():
        return _adapter(path)
    if (path / "config.json").is_file():
        run, checkpoint = _run_of(path)
        if demo.is_demo_model(path):
            label = demo.DEMO_LABEL
        elif run is not None:
            label = _run_label(run, checkpoint)
        else:
            label = path.name
        return Resolved(str(path), True, label, label, None, _id(run), checkpoint)
    from gaudi_tui.core.jobs.runfolder import RunFolder

    if (path / "status.json").is_file() and (path / "spec.toml").is_file():
        return _from_run(RunFolder(path))
    raise ChatError(
        "not_a_model",
        f"{path} has no config.json nor {ADAPTER_CONFIG}, so it is neither a Transformers model folder "
        "nor a PEFT adapter. Give the folder that save_pretrained wrote, a checkpoint-N folder, or a job id.",
    )


def _find_run(run_id: str) -> Any:
    from gaudi_tui.core.jobs import runfolder

    try:
        return runfolder.find(run_id)
    except runfolder.RunNotFound as exc:
        if "matches" in str(exc):  # several jobs match: say so; no job at all: maybe a Hub id
            raise ChatError("not_found", str(exc)) from None
        return None


def _from_run(run: Any) -> Resolved:
    folder = run_answer.answer_folder(run)
    found = _local(folder)
    if found.run_id is None:  # a command's own output folder: named after the job that wrote it
        checkpoint = folder.name if re.fullmatch(r"checkpoint-\d+", folder.name) else None
        label = _run_label(run, checkpoint)
        base_label = label if found.adapter is None else found.base_label  # a full model is its own base
        found = replace(found, label=label, base_label=base_label, run_id=str(run.id), checkpoint=checkpoint)
    return found


def _run_of(path: Path) -> tuple[Any, str | None]:
    """The run folder holding `path` (its model/ or checkpoints/checkpoint-N), and the checkpoint."""
    from gaudi_tui.core.jobs.runfolder import RunFolder

    if path.parent.name == "checkpoints" and re.fullmatch(r"checkpoint-\d+", path.name):
        root, checkpoint = path.parent.parent, path.name
    elif path.name == "model":
        root, checkpoint = path.parent, None
    else:
        return None, path.name if re.fullmatch(r"checkpoint-\d+", path.name) else None
    if (root / "spec.toml").is_file():
        return RunFolder(root), checkpoint
    return None, checkpoint


def _id(run: Any) -> str | None:
    return None if run is None else str(run.id)


def _run_spec(run: Any) -> Any:
    from gaudi_tui.core.jobs.spec import SpecError

    try:
        return run.spec()
    except SpecError:
        return None


def _run_label(run: Any, checkpoint: str | None) -> str:
    spec = _run_spec(run)
    parts = [spec.name if spec is not None else "job", run.id[-4:], checkpoint or "final model"]
    return " · ".join(parts)


def _run_base(trained: Resolved) -> Resolved:
    """The model a full fine-tune started from (its spec's `model`; a command's `--model_name_or_path`)."""
    from gaudi_tui.core.jobs import runfolder

    spec = _run_spec(runfolder.find(trained.run_id or ""))
    if spec is None:
        raise ChatError("no_base", f"Job {trained.run_id} has no readable spec.toml naming its base model.")
    if spec.kind != "command":
        return resolve(spec.model)
    named = run_answer.command_base(spec)
    if named is None:
        raise ChatError(
            "no_base",
            f"Job {trained.run_id} ran your own command, and its command names no --model_name_or_path, so "
            "the model it started from is not known: give the second model by name.",
        )
    return resolve(named)


def _adapter(path: Path) -> Resolved:
    try:
        config = load_json(path / ADAPTER_CONFIG)  # bounded: deep nesting or 5000 digits raise ValueError
        if not isinstance(config, dict):
            raise ValueError("it is not a JSON object")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ChatError(
            "adapter_corrupt",
            f"The adapter in {path} cannot be used: its {ADAPTER_CONFIG} cannot be read ({exc}). "
            "Copy the adapter folder again, or train it again.",
        ) from None
    if not any((path / name).is_file() for name in ADAPTER_WEIGHTS):
        raise ChatError(
            "adapter_corrupt",
            f"The adapter in {path} has no weights ({' or '.join(ADAPTER_WEIGHTS)}): the copy is "
            "incomplete or the save was interrupted. Copy it again, or use an earlier checkpoint.",
        )
    named = str(config.get("base_model_name_or_path") or "").strip()
    run, checkpoint = _run_of(path)
    spec = _run_spec(run) if run is not None else None
    base_ref, base_local = _find_base(path, named, spec)
    if base_local and demo.is_demo_model(base_ref):
        base_label = demo.DEMO_LABEL
    else:
        base_label = Path(base_ref).name if base_local else base_ref
    label = _run_label(run, checkpoint) if run is not None else path.name
    quantized = spec.quantization if spec is not None else "none"
    return Resolved(base_ref, base_local, base_label, label, path, _id(run), checkpoint, quantized)


def _find_base(adapter: Path, named: str, spec: Any) -> tuple[str, bool]:
    """The adapter's base as a folder here, else a Hub id in the cache (or on the Hub when online)."""
    looked: list[str] = []
    candidates = [named] if named else []
    if spec is not None and spec.model not in candidates:
        candidates.append(spec.model)
    for candidate in candidates:
        local = Path(demo.resolve_model(candidate)).expanduser()
        if tuple(local.parts[-len(DEMO_TAIL) :]) == DEMO_TAIL:
            local = demo.model_dir()
        if (local / "config.json").is_file():
            return str(local), True
        if _looks_like_path(candidate) or not HUB_ID.fullmatch(candidate):
            looked.append(f"the folder {local}")
            continue
        if _in_hub_cache(candidate) or not _offline():
            return candidate, False
        looked.append(f"the Hugging Face cache ({_hub_cache()}) for {candidate}, with the Hub offline")
    if not named:
        raise ChatError(
            "base_missing",
            f"The adapter in {adapter} does not name its base model (base_model_name_or_path is empty in "
            f"{ADAPTER_CONFIG}): set it to the model the adapter was trained on.",
        )
    raise ChatError(
        "base_missing",
        f"The adapter in {adapter} was trained on {named}, which is not at hand: looked in "
        f"{' and '.join(looked)}. Copy that model here (or `hf download {named}` on a machine with "
        f"network and copy the cache), or set base_model_name_or_path in {ADAPTER_CONFIG} to where it is.",
    )


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _hub_cache() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def _in_hub_cache(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, "config.json")
    return isinstance(found, str)
