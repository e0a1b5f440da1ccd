"""What every reader does with the figures it found: common names, and which event they make."""

from __future__ import annotations

import math

ALIASES = {
    "lr": "learning_rate",
    "learning-rate": "learning_rate",
    "grad-norm": "grad_norm",
    "gradnorm": "grad_norm",
    "val_loss": "eval_loss",
    "global_step": "step",
    "iter": "step",
    "iteration": "step",
    "total_steps": "max_steps",
}
GB_KEYS = {
    # optimum-habana's GaudiTrainer logs (optimum/habana/utils.py, get_hpu_memory_stats)
    "memory_allocated (GB)": "memory_mib",
    "max_memory_allocated (GB)": "max_memory_mib",
    "total_memory_available (GB)": "total_memory_mib",
}
STEP_KEYS = ("step", "max_steps")
TRAINING_KEYS = ("loss", "learning_rate", "grad_norm")


def number(text: str) -> float | None:
    """A finite float from a figure as printed ('2.345', '4.5e-05', 'nan' → None)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def event_of(figures: dict[str, float], kind: str | None = None) -> dict[str, object] | None:
    """A `log`, `eval` or `summary` event from named figures (common names applied), else None.

    `step` and `max_steps` become whole numbers; a GB memory figure becomes MiB. `kind`, when
    given, is the event's kind whatever the figures are.
    """
    out: dict[str, object] = {}
    for key, value in figures.items():
        if key in GB_KEYS:
            out[GB_KEYS[key]] = value * 1024
            continue
        name = ALIASES.get(key.lower(), key)
        out[name] = int(value) if name in STEP_KEYS else value
    if kind is not None:
        pass
    elif "train_runtime" in out:
        kind = "summary"
    elif any(k.startswith("eval_") for k in out):
        kind = "eval"
    elif any(k in out for k in TRAINING_KEYS) or ("step" in out and len(out) > 1):
        kind = "log"
    else:
        return None
    return {"event": kind, **out}
