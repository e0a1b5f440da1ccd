"""Which accelerator jobs run on: Gaudi (hpu) → CUDA → CPU, and what follows from it.

The facts come from a short-lived child (`python -m gaudi_tui.core.accelerator`), because importing
`habana_frameworks` acquires a card and `is_torch_hpu_available()` monkey-patches torch: neither
may happen in the TUI process. `select()` turns the facts into an `Accelerator`; it is pure, so
every branch is unit-tested without hardware.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from gaudi_tui.core import versions
from gaudi_tui.core.childprobe import ProbeCancelled, ProbeFailed, ProbeTimedOut, run_json_child

Kind = Literal["hpu", "cuda", "cpu"]
MIN_ACCELERATE_FOR_HPU = (1, 5, 0)
PROBE_TIMEOUT_S = 60.0
PROBE_NICE = 10
"""The probe runs at start-up beside the user's first keys: its 4–10 s of imports yield the cores."""


@dataclass(frozen=True)
class Accelerator:
    """Where models and jobs run, and the settings that go with it."""

    kind: Kind
    reason: str
    device_count: int = 0
    device_name: str | None = None
    dtype: str = "float32"
    torch_version: str | None = None

    @property
    def device(self) -> str:
        return self.kind

    @property
    def device_map(self) -> str:
        """The `device_map` given to `from_pretrained` (`"hpu"` on Gaudi)."""
        return self.kind

    @property
    def compile_backend(self) -> str:
        return "hpu_backend" if self.kind == "hpu" else "inductor"

    @property
    def ddp_backend(self) -> str:
        return {"hpu": "hccl", "cuda": "nccl", "cpu": "gloo"}[self.kind]

    @property
    def launcher(self) -> Literal["torchrun", "accelerate"]:
        """Multi-process launcher: `accelerate launch` on Gaudi/CUDA; torchrun on CPU (accelerate's
        multi-CPU mode needs MPI and silently starts one process)."""
        return "torchrun" if self.kind == "cpu" else "accelerate"

    @property
    def label(self) -> str:
        name = {"hpu": "Gaudi (hpu)", "cuda": "CUDA", "cpu": "CPU"}[self.kind]
        if self.kind != "cpu" and self.device_count:
            name += f" ×{self.device_count}"
        return name

    def child_env(self, cards: Sequence[int] | None = None, *, compile: bool = False) -> dict[str, str]:
        """Environment a child job needs. `cards` are Gaudi module IDs (or CUDA indices)."""
        env: dict[str, str] = {}
        if self.kind == "hpu":
            env["PT_ENABLE_INT64_SUPPORT"] = "1"
            if compile:
                env["PT_HPU_LAZY_MODE"] = "0"
            if cards:
                env["HABANA_VISIBLE_MODULES"] = ",".join(str(c) for c in cards)
        elif self.kind == "cuda" and cards:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(c) for c in cards)
        return env

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data.update(
            device=self.device,
            device_map=self.device_map,
            compile_backend=self.compile_backend,
            ddp_backend=self.ddp_backend,
            launcher=self.launcher,
        )
        return data


def select(facts: Mapping[str, object]) -> Accelerator:
    """Choose hpu → cuda → cpu from the probe's facts, saying why."""
    torch_version = facts.get("torch_version")
    tv = str(torch_version) if torch_version else None
    if facts.get("hpu_available"):
        count = _int(facts.get("hpu_count"))
        return Accelerator(
            "hpu",
            f"transformers.is_torch_hpu_available() is True ({count} card(s) visible)",
            device_count=count,
            device_name=_str_or_none(facts.get("hpu_name")),
            dtype="bfloat16",
            torch_version=tv,
        )
    why_not_hpu = _why_not_hpu(facts)
    if facts.get("cuda_available"):
        count = _int(facts.get("cuda_count"))
        name = _str_or_none(facts.get("cuda_name"))
        return Accelerator(
            "cuda",
            f"torch.cuda.is_available() ({count}× {name or 'GPU'}); {why_not_hpu}",
            device_count=count,
            device_name=name,
            dtype="bfloat16" if facts.get("cuda_bf16") else "float16",
            torch_version=tv,
        )
    reason = f"no CUDA device; {why_not_hpu}"
    if facts.get("probe_error"):
        reason = str(facts["probe_error"])
    return Accelerator("cpu", reason, torch_version=tv)


def _why_not_hpu(facts: Mapping[str, object]) -> str:
    if not facts.get("habana_frameworks"):
        return "no Gaudi software (habana_frameworks is not installed)"
    accel = _str_or_none(facts.get("accelerate_version"))
    if accel is None:
        return "habana_frameworks is installed but accelerate is missing (needs ≥ 1.5.0)"
    if not versions.at_least(accel, MIN_ACCELERATE_FOR_HPU):
        return (
            f"habana_frameworks is installed but accelerate {accel} < 1.5.0, so "
            "is_torch_hpu_available() is silently False: pip install 'accelerate>=1.5.0'"
        )
    if facts.get("hpu_error"):
        return f"habana_frameworks is installed but the HPU check failed: {facts['hpu_error']}"
    return "habana_frameworks is installed but torch.hpu.is_available() is False (no card visible)"


def _int(value: object) -> int:
    return int(value) if isinstance(value, (int, float, str)) and value != "" else 0


def _str_or_none(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def probe(
    timeout: float = PROBE_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
) -> Accelerator:
    """Run the probe child and select; a hung, broken or cancelled child yields CPU with the reason."""
    try:
        facts = run_json_child(
            [sys.executable, "-m", "gaudi_tui.core.accelerator"],
            timeout=timeout,
            env=env,
            cancel=cancel,
            nice=PROBE_NICE,
        )
    except ProbeCancelled:
        return select({"probe_error": "accelerator probe cancelled"})
    except ProbeTimedOut:
        return select({"probe_error": f"accelerator probe timed out after {timeout:g} s"})
    except ProbeFailed as exc:
        return select({"probe_error": f"accelerator probe failed ({exc})"})
    return select(facts)


def collect_facts() -> dict[str, object]:
    """Runs in the probe child: may import torch, transformers and habana_frameworks."""
    facts: dict[str, object] = {
        "habana_frameworks": importlib.util.find_spec("habana_frameworks") is not None,
        "lazy_mode": os.environ.get("PT_HPU_LAZY_MODE"),
    }
    from importlib import metadata  # the probe child only: slow to import, not needed in the panel

    try:
        facts["accelerate_version"] = metadata.version("accelerate")
    except metadata.PackageNotFoundError:
        facts["accelerate_version"] = None
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - any import failure is a fact to report
        facts["probe_error"] = f"torch cannot be imported: {type(exc).__name__}: {exc}"
        return facts
    facts["torch_version"] = torch.__version__
    try:
        from transformers.utils import is_torch_hpu_available

        facts["hpu_available"] = bool(is_torch_hpu_available())
    except Exception as exc:  # noqa: BLE001
        facts["hpu_available"] = False
        facts["hpu_error"] = f"{type(exc).__name__}: {exc}"
    if facts["hpu_available"]:
        hpu = torch.hpu  # type: ignore[attr-defined]  # habana_frameworks adds torch.hpu on import
        facts["hpu_count"] = int(hpu.device_count())
        try:
            facts["hpu_name"] = str(hpu.get_device_name())
        except Exception:  # noqa: BLE001 - the name is optional
            facts["hpu_name"] = None
    facts["cuda_available"] = bool(torch.cuda.is_available())
    if facts["cuda_available"]:
        facts["cuda_count"] = torch.cuda.device_count()
        facts["cuda_name"] = torch.cuda.get_device_name(0)
        facts["cuda_bf16"] = bool(torch.cuda.is_bf16_supported())
    return facts


if __name__ == "__main__":
    print(json.dumps(collect_facts()), flush=True)
