"""The job spec: every setting of a training job, its presets, and its text forms.

A spec is a frozen dataclass. It is written to the run folder as `spec.toml` and read back from
there by the supervisor and the training processes; the form, `--set key=value` and TOML files
all go through the same coercion (`from_mapping`/`with_overrides`), so a value means the same
thing wherever it comes from. Checks that need the accelerator or the disk live in `validate`.
"""

from __future__ import annotations

import difflib
import functools
import re
import shlex
import sys
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, cast

from gaudi_tui.core.jobs.spec_coerce import coerce_to
from gaudi_tui.core.jobs.spec_fields import ARGV_FIELDS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

Scheduler = Literal[
    "linear", "cosine", "cosine_with_restarts", "polynomial", "constant", "constant_with_warmup"
]
Quantization = Literal["none", "nf4", "int8"]
Launcher = Literal["auto", "single", "torchrun", "accelerate"]
Device = Literal["auto", "hpu", "cuda", "cpu"]
Target = Literal["local", "ray", "slurm"]
SlurmGres = Literal["gpu", "hpu", "none"]
Kind = Literal["trainer", "command", "serve"]
ServeEngine = Literal["auto", "vllm", "transformers"]
CommandLauncher = Literal["direct", "torchrun", "accelerate", "deepspeed"]
MetricsSource = Literal["auto", "trainer", "json", "pattern"]


SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW(OR)?D|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH", re.IGNORECASE
)
"""Environment variable names whose values are secrets: never shown, never sent where others read them."""


def is_secret(name: str) -> bool:
    return SECRET_NAME.search(name) is not None


def masked_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` to show: secret values replaced by ***."""
    return {k: "***" if is_secret(k) else v for k, v in env.items()}


class SpecError(ValueError):
    """A spec value that cannot be read: unknown key, wrong type, bad choice."""


@dataclass(frozen=True)
class JobSpec:
    """A training job. `help` metadata is shown in the form and by `gaudi-tui train --fields`."""

    name: str = field(default="demo fine-tune", metadata={"help": "label shown in the job list"})
    model: str = field(default="demo", metadata={"help": "'demo', a local model folder or a Hub id"})
    dataset: str = field(
        default="demo", metadata={"help": "'demo', a .txt/.jsonl/.csv/.parquet file or a Hub dataset id"}
    )
    text_field: str = field(default="text", metadata={"help": "column that holds the training text"})
    max_seq_len: int = field(default=128, metadata={"help": "tokens per example (longer ones are cut)"})
    epochs: float = field(default=1.0, metadata={"help": "passes over the data (when max_steps is 0)"})
    max_steps: int = field(default=200, metadata={"help": "optimizer steps; 0 = train for `epochs`"})
    batch_size: int = field(default=16, metadata={"help": "examples per process per micro-batch"})
    grad_accum: int = field(default=1, metadata={"help": "micro-batches per optimizer step"})
    learning_rate: float = field(default=2e-3, metadata={"help": "peak learning rate"})
    lr_scheduler: Scheduler = field(default="linear", metadata={"help": "learning-rate schedule"})
    warmup_steps: int = field(default=10, metadata={"help": "steps of linear warm-up"})
    bf16: bool = field(default=False, metadata={"help": "bfloat16 mixed precision"})
    torch_compile: bool = field(
        default=False, metadata={"help": "torch.compile (hpu_backend on Gaudi, needs eager mode)"}
    )
    lora: bool = field(default=False, metadata={"help": "train LoRA adapters instead of all weights"})
    lora_r: int = field(default=8, metadata={"help": "LoRA rank"})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA scaling (alpha)"})
    lora_dropout: float = field(default=0.05, metadata={"help": "LoRA dropout"})
    lora_target_modules: tuple[str, ...] = field(
        default=("q_proj", "v_proj"), metadata={"help": "modules that get adapters (comma-separated)"}
    )
    quantization: Quantization = field(
        default="none", metadata={"help": "base weights: none, nf4 (QLoRA, with LoRA) or int8"}
    )
    eval_split: float = field(default=0.0, metadata={"help": "fraction held out for evaluation (0 = none)"})
    eval_steps: int = field(default=0, metadata={"help": "evaluate every N steps (0 = never)"})
    save_steps: int = field(default=0, metadata={"help": "checkpoint every N steps (0 = only on stop)"})
    logging_steps: int = field(default=5, metadata={"help": "metrics every N steps"})
    seed: int = field(default=42, metadata={"help": "random seed"})
    processes: int = field(default=1, metadata={"help": "processes (one per card) when no cards are chosen"})
    cards: tuple[int, ...] = field(default=(), metadata={"help": "Gaudi module IDs (from Devices)"})
    launcher: Launcher = field(default="auto", metadata={"help": "auto, single, torchrun or accelerate"})
    device: Device = field(
        default="auto", metadata={"help": "auto (the detected accelerator), hpu, cuda or cpu"}
    )
    target: Target = field(
        default="local", metadata={"help": "local (this host), ray (a Ray cluster) or slurm (sbatch)"}
    )
    ray_address: str = field(
        default="", metadata={"help": "Ray dashboard URL, e.g. http://127.0.0.1:8265 ('' = $RAY_ADDRESS)"}
    )
    workers: int = field(
        default=1,
        metadata={"help": "Ray: training processes (Ray Train workers; your command: processes on one node)"},
    )
    hpus_per_worker: int = field(default=1, metadata={"help": "Ray: Gaudi cards per worker"})
    storage_path: str = field(
        default="",
        metadata={"help": "Ray: checkpoint folder every node reaches ('' = this host's runs folder)"},
    )
    max_failures: int = field(
        default=0, metadata={"help": "Ray: automatic restarts from the last checkpoint after a failure"}
    )
    ray_python: str = field(
        default="", metadata={"help": "Ray: Python on the cluster's nodes ('' = this panel's Python)"}
    )
    slurm_partition: str = field(default="", metadata={"help": "Slurm: partition ('' = the default one)"})
    slurm_nodes: int = field(default=1, metadata={"help": "Slurm: nodes (hosts)"})
    slurm_cards_per_node: int = field(
        default=8, metadata={"help": "Slurm: cards per node, one rank each (1, 2, 4 or 8; 8 across nodes)"}
    )
    slurm_time_limit: str = field(
        default="",
        metadata={"help": "Slurm: time limit, e.g. 30, 2:00:00, 1-00:00:00 ('' = the partition's)"},
    )
    slurm_account: str = field(default="", metadata={"help": "Slurm: account to charge ('' = yours)"})
    slurm_qos: str = field(default="", metadata={"help": "Slurm: quality of service ('' = the default)"})
    slurm_gres: SlurmGres = field(
        default="gpu", metadata={"help": "Slurm: GRES the site names cards by: gpu, hpu (e.g. ALCF) or none"}
    )
    slurm_gres_type: str = field(default="", metadata={"help": "Slurm: GRES type, e.g. gaudi2 ('' = any)"})
    slurm_options: tuple[str, ...] = field(
        default=(), metadata={"help": "Slurm: extra sbatch options, e.g. --constraint=ib,--exclude=n3"}
    )
    kill_grace_s: float = field(
        default=10.0, metadata={"help": "seconds between SIGTERM and SIGKILL on kill"}
    )
    trust_remote_code: bool = field(default=False, metadata={"help": "run the model repo's own code"})
    kind: Kind = field(
        default="trainer",
        metadata={
            "help": "trainer (the panel's fine-tune), command (your own command) or serve (a model server)"
        },
    )
    command: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "command: its arguments, typed as in a shell (run without one), e.g. train.py --lr 1e-4"
        },
    )
    workdir: str = field(
        default="", metadata={"help": "command: its working folder ('' = where it was started)"}
    )
    ray_workdir: str = field(
        default="",
        metadata={
            "help": "command on Ray: its folder on the cluster's nodes ('' = workdir, shipped with the job)"
        },
    )
    command_launcher: CommandLauncher = field(
        default="direct",
        metadata={
            "help": "command: direct (as given), or torchrun/accelerate/deepspeed, one process per card"
        },
    )
    wrap_trainer: bool = field(
        default=True,
        metadata={
            "help": "command: add the panel's callback to every Trainer it builds (metrics, graceful stop)"
        },
    )
    metrics_source: MetricsSource = field(
        default="auto",
        metadata={"help": "command: read metrics from its output: auto, trainer, json, pattern"},
    )
    metrics_pattern: str = field(
        default="", metadata={"help": "command: a regex with named groups, e.g. loss=(?P<loss>[0-9.]+)"}
    )
    resume_flag: str = field(
        default="--resume_from_checkpoint", metadata={"help": "command: the flag that passes the checkpoint"}
    )
    output_dir: str = field(
        default="",
        metadata={"help": "command: where its checkpoint-N folders appear ('' = its --output_dir)"},
    )
    log_file: str = field(
        default="", metadata={"help": "attach: the log of a run started by hand (kind=command, no command)"}
    )
    pid: int = field(default=0, metadata={"help": "attach: that run's process ID (0 = only follow its log)"})
    pid_started: float = field(
        default=0.0, metadata={"help": "attach: that process's start time (filled in when attaching)"}
    )
    env: Mapping[str, str] = field(default_factory=dict, metadata={"help": "extra environment variables"})
    serve_engine: ServeEngine = field(
        default="auto",
        metadata={"help": "serve: auto (vllm on hpu when installed, else transformers), vllm, transformers"},
    )
    serve_model: str = field(
        default="demo", metadata={"help": "serve: 'demo', a model or adapter folder, a Hub id, or a job id"}
    )
    serve_host: str = field(default="127.0.0.1", metadata={"help": "serve: the address it listens on"})
    serve_port: int = field(default=0, metadata={"help": "serve: its port (0 = a free one)"})
    serve_args: tuple[str, ...] = field(
        default=(),
        metadata={"help": "serve: extra engine arguments, typed as in a shell, e.g. --max-model-len 4096"},
    )
    serve_api_key_env: str = field(
        default="", metadata={"help": "serve: the environment variable holding its API key ('' = none)"}
    )

    @property
    def uses_lora(self) -> bool:
        return self.lora or self.quantization != "none"


PRESETS: dict[str, JobSpec] = {
    "demo fine-tune": JobSpec(),
    "LoRA": JobSpec(name="LoRA", lora=True, learning_rate=5e-3, max_steps=100),
    "QLoRA": JobSpec(
        name="QLoRA", lora=True, quantization="nf4", learning_rate=5e-3, max_steps=30, batch_size=8
    ),
    "your command": JobSpec(name="my command", kind="command", max_steps=0),
    "serve a model": JobSpec(name="serve", kind="serve", max_steps=0),
}


def default_ray_address() -> str:
    """The cluster a Ray job goes to when the spec names none: the `cluster.ray_address` setting
    ($RAY_ADDRESS, else config.toml)."""
    from gaudi_tui.core import settings

    return (settings.load().settings.ray_address or "").strip()


def preset(name: str) -> JobSpec:
    """A preset by name, ignoring case, spaces and dashes ('demo', 'lora', 'qlora' work too)."""
    wanted = _squash(name)
    for key, spec in PRESETS.items():
        if _squash(key) in (wanted, wanted + "finetune"):
            return spec
    raise SpecError(f"no preset {name!r}; presets are: {', '.join(PRESETS)}")


def _squash(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


@functools.cache
def field_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(JobSpec))


def field_help(name: str) -> str:
    return next(f.metadata.get("help", "") for f in fields(JobSpec) if f.name == name)


def field_type(name: str) -> Any:
    return _hints()[name]


@functools.cache
def _hints() -> dict[str, Any]:
    return typing.get_type_hints(JobSpec)


def choices(name: str) -> tuple[str, ...] | None:
    """The allowed values of a Literal field, else None."""
    hint = field_type(name)
    return tuple(typing.get_args(hint)) if typing.get_origin(hint) is Literal else None


def coerce(name: str, value: object) -> object:
    """Turn a TOML value or a typed-in string into the field's type, or raise SpecError."""
    if name not in field_names():
        close = difflib.get_close_matches(name, field_names(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise SpecError(f"unknown setting {name!r}{hint}")
    hint = field_type(name)
    if name in ARGV_FIELDS and isinstance(value, str):
        try:
            return tuple(shlex.split(value))  # words as a shell splits them; nothing runs a shell
        except ValueError as exc:
            raise SpecError(f"{name}: {exc} (close the quote)") from None
    try:
        return coerce_to(hint, value)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"{name}: {exc}") from None


def from_mapping(data: Mapping[str, object], base: JobSpec | None = None) -> JobSpec:
    """A spec from `base` (default: the defaults) with these values, each coerced and checked."""
    # Each value was coerced to its field's type above, which a type checker cannot follow.
    values: dict[str, Any] = {name: coerce(name, value) for name, value in data.items()}
    return replace(base, **values) if base is not None else JobSpec(**values)


def parse_assignments(pairs: list[str]) -> dict[str, str]:
    """`["max_steps=50", "lora=true"]` → dict; a pair without '=' is a SpecError."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"--set wants KEY=VALUE, got {pair!r}")
        out[key.strip()] = value
    return out


def with_overrides(spec: JobSpec, pairs: list[str]) -> JobSpec:
    return from_mapping(parse_assignments(pairs), base=spec)


def to_mapping(spec: JobSpec) -> dict[str, object]:
    out: dict[str, object] = {}
    for f in fields(spec):
        value = getattr(spec, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else dict(value) if f.name == "env" else value
    return out


def display(name: str, value: object) -> str:
    """A value as typed in the form or after `--set` (the inverse of `coerce` for strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if name in ARGV_FIELDS and isinstance(value, tuple):
        return shlex.join(value)
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, Mapping):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def to_toml(spec: JobSpec) -> str:
    """The spec as TOML: one `key = value` line per field, `[env]` last."""
    lines = ["# gaudi-tui training job; `gaudi-tui train FILE` launches it again"]
    env: Mapping[str, str] = {}
    for name, value in to_mapping(spec).items():
        if name == "env":
            env = cast(Mapping[str, str], value)  # to_mapping gives env as a string mapping
            continue
        lines.append(f"{name} = {_toml_value(value)}")
    lines.append("")
    lines.append("[env]")
    lines.extend(f"{_toml_str(k)} = {_toml_str(v)}" for k, v in sorted(env.items()))
    return "\n".join(lines) + "\n"


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _toml_str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")  # pragma: no cover


def _toml_str(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(ch if ch.isprintable() else _toml_escape(ch) for ch in escaped)
    return f'"{escaped}"'


def _toml_escape(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def from_toml(text: str) -> JobSpec:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"not valid TOML: {exc}") from None
    return from_mapping(data)


def load(path: Path) -> JobSpec:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read the spec {path}: {exc.strerror or exc}") from None
    try:
        return from_toml(text)
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from None
