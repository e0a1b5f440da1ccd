"""Numbers the Chat screen shows: device memory, what a load cost, and what each answer cost.

Plain values that travel as JSON between the engine child, the store and the UI.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from gaudi_tui.core.chat.protocol import known_fields
from gaudi_tui.core.chat.trained import Provenance


def _with_memory(cls: type, data: Mapping[str, Any]) -> Any:
    values = known_fields(cls, data)
    values["memory"] = MemoryReport.from_dict(data.get("memory"))
    return cls(**values)


def format_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f} GiB"
    return f"{n / (1 << 20):.0f} MiB"


def format_seconds(s: float | None) -> str:
    if s is None:
        return "?"
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.1f} s"


@dataclass(frozen=True)
class MemoryReport:
    """Device memory of the engine process, read inside it.

    Gaudi: `torch.hpu.memory_stats()` InUse / MaxInUse / Limit. CUDA: memory_allocated /
    max_memory_allocated / total memory. CPU: the engine's RSS / peak RSS / host memory.
    """

    kind: str
    in_use: int | None = None
    peak: int | None = None
    limit: int | None = None
    rss: int | None = None

    def summary(self) -> str:
        if self.kind == "cpu":
            return f"RSS {format_bytes(self.in_use)} (peak {format_bytes(self.peak)})"
        name = "HPU" if self.kind == "hpu" else "CUDA"
        text = f"{name} {format_bytes(self.in_use)} (peak {format_bytes(self.peak)}"
        if self.limit:
            text += f" of {format_bytes(self.limit)}"
        return text + ")"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> MemoryReport | None:
        return cls(**known_fields(cls, data)) if data else None


@dataclass(frozen=True)
class LoadReport:
    """What the engine loaded, where, and how long loading and the warm-up generation took."""

    label: str
    source: str
    model_type: str
    parameters: int
    dtype: str
    device: str
    quantization: str
    compile_backend: str | None
    chat_template: bool
    context_length: int | None
    accelerator: str
    accelerator_reason: str
    load_s: float
    warmup_s: float
    memory: MemoryReport | None = None
    warmup_graphs: int | None = None
    """Gaudi: graphs the runtime compiled by the end of the warm-up (its metrics file)."""
    rows: tuple[Provenance, ...] = ()
    """What answers: the model (its base, adapter, run and checkpoint), then the second model the
    same engine serves when comparing."""

    @property
    def provenance(self) -> Provenance:
        return self.rows[0] if self.rows else Provenance(self.label, self.label)

    def summary(self) -> str:
        if self.device == "endpoint":  # an OpenAI-compatible server's model (core/chat/endpoint.py)
            return f"{self.provenance.summary()} · checked in {format_seconds(self.load_s)}"
        parts = [self.provenance.summary(), f"{self.device} {self.dtype}"]
        if self.quantization != "none":
            parts.append(self.quantization)
        if self.compile_backend:
            parts.append(f"compiled ({self.compile_backend})")
        graphs = f" ({self.warmup_graphs} graphs)" if self.warmup_graphs is not None else ""
        parts += [f"load {format_seconds(self.load_s)}", f"warm-up {format_seconds(self.warmup_s)}{graphs}"]
        return " · ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # the memory report becomes a nested dict

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoadReport:
        rows = tuple(p for p in (Provenance.from_dict(r) for r in data.get("rows") or ()) if p)
        return _with_memory(cls, {**data, "rows": rows})


@dataclass(frozen=True)
class AnswerMetrics:
    """One answer as the pane saw it: first-token latency where the first token arrives (after the
    engine, the pipe and the reader); the decode rate from when the engine made its tokens (an
    endpoint: where its chunks arrive); token counts by the engine."""

    ttft_s: float | None
    decode_tps: float | None
    tokens_in: int
    tokens_out: int
    total_s: float
    stopped: bool = False
    memory: MemoryReport | None = None
    new_graphs: int | None = None
    """Gaudi: graphs compiled during this answer (after the warm-up): a new length recompiles
    unless shapes are static."""

    def summary(self) -> str:
        parts = [
            f"TTFT {format_seconds(self.ttft_s)}",
            f"{self.decode_tps:.1f} tok/s" if self.decode_tps else "– tok/s",
            f"{self.tokens_in} in / {self.tokens_out} out",
        ]
        if self.new_graphs:
            parts.append(f"{self.new_graphs} graphs compiled")
        if self.memory:
            parts.append(self.memory.summary())
        if self.stopped:
            parts.append("stopped")
        return " · ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> AnswerMetrics | None:
        return _with_memory(cls, data) if data else None


def decode_rate(tokens_out: int, first_at: float | None, last_at: float | None) -> float | None:
    """Tokens per second after the first token (the first one pays for the prefill)."""
    if first_at is None or last_at is None or tokens_out < 2 or last_at <= first_at:
        return None
    return (tokens_out - 1) / (last_at - first_at)
