"""Which settings of a job spec mean something for which job, and the order the form shows them in.

A setting belongs to at most one kind (`COMMAND_FIELDS`, `TRAINER_FIELDS`, `SERVE_FIELDS`) and at most one target
(`RAY_FIELDS`, `SLURM_FIELDS`); the rest mean something for every job. The form shows a job's own
settings only: first what a user of that kind must fill (`FIRST`), then the name, kind and target,
then the target's settings and the rest, and the `ADVANCED` ones last, folded away.
"""

from __future__ import annotations

from collections.abc import Iterable

COMMAND_FIELDS = (
    "command", "workdir", "ray_workdir", "command_launcher", "wrap_trainer", "metrics_source",
    "metrics_pattern", "resume_flag", "output_dir", "log_file", "pid", "pid_started",
)  # fmt: skip
"""Settings of a command job (`kind = "command"`) only."""
TRAINER_FIELDS = (
    "model", "dataset", "text_field", "max_seq_len", "epochs", "max_steps", "batch_size", "grad_accum",
    "learning_rate", "lr_scheduler", "warmup_steps", "bf16", "torch_compile", "lora", "lora_r",
    "lora_alpha", "lora_dropout", "lora_target_modules", "quantization", "eval_split", "eval_steps",
    "save_steps", "logging_steps", "seed", "launcher", "trust_remote_code",
)  # fmt: skip
"""Settings of the built-in Trainer job only."""
SERVE_FIELDS = (
    "serve_engine", "serve_model", "serve_host", "serve_port", "serve_args", "serve_api_key_env",
)  # fmt: skip
"""Settings of a model server (`kind = "serve"`) only; it also takes `trust_remote_code`."""
ARGV_FIELDS = ("command", "serve_args")
"""Typed as in a shell (split by `shlex`; nothing runs a shell)."""
RAY_FIELDS = (
    "ray_address", "workers", "hpus_per_worker", "storage_path", "max_failures", "ray_python", "ray_workdir",
)  # fmt: skip
"""Settings of a job on a Ray cluster (`target = "ray"`) only."""
SLURM_FIELDS = (
    "slurm_partition", "slurm_nodes", "slurm_cards_per_node", "slurm_time_limit", "slurm_account",
    "slurm_qos", "slurm_gres", "slurm_gres_type", "slurm_options",
)  # fmt: skip
"""Settings of a job sent to Slurm (`target = "slurm"`) only."""

FIRST: dict[str, tuple[str, ...]] = {
    "command": ("command", "workdir"),
    "trainer": ("model", "dataset"),
    "serve": ("serve_model", "serve_engine"),
}
"""What a new user of each kind fills first."""
LEADING = (*FIRST["command"], *FIRST["trainer"], *FIRST["serve"], "name", "kind", "target")
"""The top of the form (each kind sees its own `FIRST` there; the other kind's are hidden)."""
ADVANCED = (
    "text_field", "grad_accum", "lr_scheduler", "warmup_steps", "torch_compile", "lora_r", "lora_alpha",
    "lora_dropout", "lora_target_modules", "eval_split", "eval_steps", "save_steps", "logging_steps",
    "seed", "launcher", "trust_remote_code", "storage_path", "max_failures", "ray_python", "ray_workdir",
    "slurm_account", "slurm_qos", "slurm_gres", "slurm_gres_type", "slurm_options", "wrap_trainer",
    "resume_flag", "log_file", "pid", "pid_started", "kill_grace_s", "serve_api_key_env",
)  # fmt: skip
"""Settings whose defaults suit a first job: the form folds them under "Advanced"."""


def applies(name: str, kind: str, target: str | None = None) -> bool:
    """Whether a setting means something for a job of this kind (and, given one, on this target)."""
    if name in COMMAND_FIELDS and kind != "command":
        return False
    if name in SERVE_FIELDS and kind != "serve":
        return False
    if name in TRAINER_FIELDS and (kind == "command" or kind == "serve" and name != "trust_remote_code"):
        return False
    if target is not None and name in RAY_FIELDS and target != "ray":
        return False
    return target is None or name not in SLURM_FIELDS or target == "slurm"


def form_order(names: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`names` in the form's order: (the main part, the advanced part)."""
    names = tuple(names)
    by_target = (*RAY_FIELDS, *SLURM_FIELDS)
    lead = tuple(n for n in LEADING if n in names)
    targets = tuple(n for n in by_target if n in names and n not in ADVANCED)
    rest = tuple(n for n in names if n not in (*lead, *targets, *ADVANCED))
    return (*lead, *targets, *rest), tuple(n for n in names if n in ADVANCED)
