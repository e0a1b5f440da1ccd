"""Checks a spec against the machine before anything is launched.

Each problem names the setting, says what is wrong and what to do. `numbers` and `hardware` are
pure; `sources` reads the disk (the model folder, the first rows of the dataset), so the panel
calls `validate` from a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.devices.cardsets import check_modules
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.worker import data
from gaudi_tui.core.untrusted.files import load_json


@dataclass(frozen=True)
class Problem:
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class InvalidSpec(ValueError):
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def validate(spec: JobSpec, accel: Accelerator, env: Mapping[str, str] | None = None) -> list[Problem]:
    """Every problem with this spec (prepared for this host) on this accelerator; `env` is the
    environment the job starts with (None: this process's)."""
    job_env = dict(os.environ if env is None else env)
    job_env.update(spec.env)
    own = hardware(spec, accel, job_env)
    return shared(spec, own, job_env, accel.device_name, sources_here=True)


def shared(
    spec: JobSpec, own: list[Problem], env: Mapping[str, str], device_name: str | None, sources_here: bool
) -> list[Problem]:
    """Every problem of a job whatever its target, on the spec as the target prepared it: the
    numbers, the target's `own` problems (its `check`), the hardware rules (`env` is the job's
    environment, `device_name` the card generation when known), then the sources (they read the
    disk: only where the job runs, `sources_here`; a cluster job checks them on the cluster)."""
    return [
        *numbers(spec),
        *own,
        *gaudi_rules(spec, device_name, env),
        *(sources(spec) if sources_here else []),
    ]


def gaudi_rules(spec: JobSpec, device_name: str | None, env: Mapping[str, str]) -> list[Problem]:
    """Intel's rules for a job on Gaudi cards, wherever they are."""
    if spec.device != "hpu":
        return []
    out: list[Problem] = []
    if spec.torch_compile and env.get("PT_HPU_LAZY_MODE", "1").strip() != "0":
        out.append(
            Problem(
                "torch_compile",
                f"torch.compile (hpu_backend) needs eager mode, but PT_HPU_LAZY_MODE="
                f"{env.get('PT_HPU_LAZY_MODE', '1 (unset means lazy)')}: set PT_HPU_LAZY_MODE=0 "
                "or turn torch_compile off",
            )
        )
    if spec.quantization == "int8":
        out.append(
            Problem(
                "quantization",
                "bitsandbytes has no 8-bit kernels for Gaudi (only NF4 4-bit): use nf4 or none",
            )
        )
    return out + generation_rules(spec, device_name)


def generation_rules(spec: JobSpec, device_name: str | None) -> list[Problem]:
    """The rules that depend on the card generation (`device_name`: GAUDI, GAUDI2, …; None: unknown)."""
    if spec.device == "hpu" and spec.quantization == "nf4" and is_gaudi1(device_name):
        return [
            Problem(
                "quantization", "QLoRA (NF4) needs Gaudi 2 or 3; this is a first-generation Gaudi: use LoRA"
            )
        ]
    return []


def numbers(spec: JobSpec) -> list[Problem]:
    out: list[Problem] = []

    def need(ok: bool, name: str, message: str) -> None:
        if not ok:
            out.append(Problem(name, message))

    need(spec.name.strip() != "", "name", "give the job a name")
    need(
        8 <= spec.max_seq_len <= 1_048_576, "max_seq_len", f"{spec.max_seq_len} is not between 8 and 1048576"
    )
    need(spec.max_steps >= 0, "max_steps", f"{spec.max_steps} is negative; use 0 to train for `epochs`")
    if spec.max_steps == 0:
        need(
            0 < spec.epochs <= 10_000,
            "epochs",
            f"{spec.epochs:g} is not between 0 and 10000 (max_steps is 0)",
        )
    need(1 <= spec.batch_size <= 65_536, "batch_size", f"{spec.batch_size} is not between 1 and 65536")
    need(1 <= spec.grad_accum <= 4096, "grad_accum", f"{spec.grad_accum} is not between 1 and 4096")
    need(0 < spec.learning_rate < 1, "learning_rate", f"{spec.learning_rate:g} is not between 0 and 1")
    need(spec.warmup_steps >= 0, "warmup_steps", f"{spec.warmup_steps} is negative")
    if spec.max_steps:
        need(
            spec.warmup_steps <= spec.max_steps,
            "warmup_steps",
            f"{spec.warmup_steps} is more than max_steps ({spec.max_steps})",
        )
    need(spec.lora_r >= 1, "lora_r", f"{spec.lora_r} must be at least 1")
    need(spec.lora_alpha >= 1, "lora_alpha", f"{spec.lora_alpha} must be at least 1")
    need(0 <= spec.lora_dropout < 1, "lora_dropout", f"{spec.lora_dropout:g} is not in [0, 1)")
    need(
        not spec.uses_lora or bool(spec.lora_target_modules),
        "lora_target_modules",
        "name at least one module (e.g. q_proj,v_proj)",
    )
    need(0 <= spec.eval_split <= 0.5, "eval_split", f"{spec.eval_split:g} is not between 0 and 0.5")
    need(spec.eval_steps >= 0, "eval_steps", f"{spec.eval_steps} is negative")
    if spec.eval_split > 0 and spec.eval_steps == 0:
        out.append(Problem("eval_steps", "eval_split is set but eval_steps is 0: set how often to evaluate"))
    if spec.eval_steps > 0 and spec.eval_split == 0:
        out.append(
            Problem("eval_split", "eval_steps is set but nothing is held out: set eval_split (e.g. 0.1)")
        )
    need(spec.save_steps >= 0, "save_steps", f"{spec.save_steps} is negative")
    need(spec.logging_steps >= 1, "logging_steps", f"{spec.logging_steps} must be at least 1")
    need(0 <= spec.seed < 2**32, "seed", f"{spec.seed} is not between 0 and 2**32-1")
    need(1 <= spec.processes <= 64, "processes", f"{spec.processes} is not between 1 and 64")
    need(0 < spec.kill_grace_s <= 600, "kill_grace_s", f"{spec.kill_grace_s:g} is not between 0 and 600 s")
    if spec.quantization != "none" and not spec.lora:
        out.append(
            Problem("lora", f"{spec.quantization} base weights cannot be trained directly: turn lora on")
        )
    return out


def is_gaudi1(device_name: str | None) -> bool:
    name = (device_name or "").upper().replace(" ", "").replace("-", "").removeprefix("INTEL")
    return name in ("GAUDI", "GAUDI1") or "HL205" in name


def hardware(spec: JobSpec, accel: Accelerator, env: Mapping[str, str]) -> list[Problem]:
    """The spec against this host's accelerator (the rules for every Gaudi job are in `shared`)."""
    out: list[Problem] = []
    device = accel.kind if spec.device == "auto" else spec.device
    if device != accel.kind:
        out.append(
            Problem("device", f"{device} was asked for, but this machine runs on {accel.kind}: use auto")
        )
        return out
    processes = len(spec.cards) or spec.processes
    if spec.cards and device != "hpu":
        out.append(Problem("cards", f"cards are Gaudi module IDs, but this job runs on {device}"))
    if device == "hpu":
        out.extend(_gaudi_cards(spec, accel, processes))
    elif device == "cuda" and accel.device_count and processes > accel.device_count:
        out.append(Problem("processes", f"{processes} processes but only {accel.device_count} GPU(s)"))
    elif device == "cpu":
        cores = os.cpu_count() or 1
        if processes > cores:
            out.append(Problem("processes", f"{processes} processes but this machine has {cores} CPU cores"))
        if spec.launcher == "accelerate" and processes > 1:
            out.append(
                Problem(
                    "launcher",
                    "accelerate launch starts only one process on CPU (multi-CPU needs MPI): use torchrun",
                )
            )
    if spec.launcher == "single" and processes > 1:
        out.append(Problem("launcher", f"single runs one process, but {processes} were asked for"))
    return out


def _gaudi_cards(spec: JobSpec, accel: Accelerator, processes: int) -> list[Problem]:
    """This host's cards: supported sets, what is visible, the launcher."""
    out: list[Problem] = []
    if spec.cards:
        check = check_modules(spec.cards)
        if not check.ok:
            out.append(Problem("cards", check.message))
    elif processes not in (1, 2, 4, 8):
        out.append(Problem("processes", f"{processes} cards is not a supported set size (1, 2, 4 or 8)"))
    if accel.device_count and processes > accel.device_count:
        out.append(Problem("processes", f"{processes} cards asked for but {accel.device_count} are visible"))
    if spec.launcher == "torchrun" and processes > 1:
        out.append(Problem("launcher", "on Gaudi use accelerate (one process per card); torchrun is for CPU"))
    return out


def sources(spec: JobSpec) -> list[Problem]:
    out: list[Problem] = []
    model_problem = _model_problem(spec.model)
    if model_problem:
        out.append(Problem("model", model_problem))
    else:
        limit = _max_positions(spec.model)
        if limit is not None and spec.max_seq_len > limit:
            out.append(
                Problem("max_seq_len", f"{spec.max_seq_len} is longer than the model's {limit} positions")
            )
    if not spec.text_field.strip():
        out.append(Problem("text_field", "name the column that holds the text"))
        return out
    try:
        data.peek(spec.dataset, spec.text_field)
    except data.DatasetError as exc:
        out.append(Problem("dataset", str(exc)))
    return out


def _max_positions(model: str) -> int | None:
    """`max_position_embeddings` of a local model folder (the demo included), else None."""
    from gaudi_tui.core.demo import resolve_model

    try:
        config = load_json(Path(resolve_model(model)).expanduser() / "config.json")
    except (OSError, ValueError):  # Untrusted is a ValueError: deep nesting, 5000 digits, too long
        return None
    value = config.get("max_position_embeddings") if isinstance(config, dict) else None
    return value if isinstance(value, int) and value > 0 else None


def _model_problem(model: str) -> str | None:
    text = model.strip()
    if text.lower() in ("", "demo"):
        return None
    path = Path(text).expanduser()
    if text.startswith(("/", ".", "~")) or path.exists():
        if not (path / "config.json").is_file():
            return f"{path} is not a model folder (no config.json): give a folder saved by save_pretrained"
        return None
    if "/" not in text or text.count("/") > 1:
        return f"{text!r} is neither 'demo', a local folder nor a Hub id (owner/name)"
    if data.hub_offline():
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(text, "config.json"), str):
            return f"{text} is not in the local cache and the Hub is offline (HF_HUB_OFFLINE=1)"
    return None
