"""What the user chooses for a chat model: load options and generation parameters.

Pure values and rules (no torch): the Chat screen, the headless command and the engine child all
use them, so an option refused on Gaudi is refused the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from gaudi_tui.core.chat.protocol import known_fields

if TYPE_CHECKING:  # the accelerator module loads after the panel's first frame
    from gaudi_tui.core.accelerator import Kind

Dtype = Literal["auto", "bfloat16", "float16", "float32"]
Quantization = Literal["none", "nf4", "fp4", "int8"]

DTYPES: tuple[Dtype, ...] = ("auto", "bfloat16", "float16", "float32")
QUANTIZATIONS: dict[Quantization, str] = {
    "none": "none",
    "nf4": "4-bit NF4 (bitsandbytes)",
    "fp4": "4-bit FP4 (bitsandbytes)",
    "int8": "8-bit LLM.int8 (bitsandbytes)",
}
GAUDI_BNB_REASON = (
    "bitsandbytes' Gaudi (hpu) backend implements only NF4 4-bit dequantization: "
    "there is no 8-bit or FP4 kernel for hpu. Use 4-bit NF4 (Gaudi 2 and 3)."
)


def quantization_unavailable(kind: Kind, quantization: Quantization) -> str | None:
    """Why `quantization` cannot run on accelerator `kind`, or None when it can."""
    if kind == "hpu" and quantization in ("fp4", "int8"):
        return GAUDI_BNB_REASON
    return None


def resolve_dtype(dtype: Dtype, accelerator_dtype: str) -> str:
    """`auto` means the accelerator's dtype (bf16 on Gaudi, fp32 on CPU)."""
    return accelerator_dtype if dtype == "auto" else dtype


@dataclass(frozen=True)
class LoadOptions:
    """How to load a model. `model` is "demo", a local folder, an adapter or checkpoint folder, a
    job id or a Hub id (core/chat/trained.py).

    `merge` folds an adapter into its base (faster answers, no switching it off); `base_in_dtype`
    loads a QLoRA adapter's base unquantized in the chosen dtype instead of 4-bit NF4; `compare` is
    a second model the same engine serves ("base", or another adapter of the same base).

    `endpoint` (an http(s) URL) answers from an OpenAI-compatible server instead of an engine of the
    panel's (core/chat/endpoint.py): `model` is then the server's model id ("" = the only one it
    serves), and `api_key_env` names the environment variable holding its key (never the key)."""

    model: str = "demo"
    dtype: Dtype = "auto"
    quantization: Quantization = "none"
    compile: bool = False
    trust_remote_code: bool = False
    merge: bool = False
    base_in_dtype: bool = False
    compare: str = ""
    endpoint: str = ""
    api_key_env: str = ""

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {self.dtype!r}")
        if self.quantization not in QUANTIZATIONS:
            raise ValueError(
                f"quantization must be one of {', '.join(QUANTIZATIONS)}, not {self.quantization!r}"
            )
        if not self.model.strip() and not self.endpoint:
            object.__setattr__(self, "model", "demo")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoadOptions:
        return cls(**known_fields(cls, data))


@dataclass(frozen=True)
class GenerationParams:
    """Sampling settings for one answer; the side panel edits them per conversation.

    `min_new_tokens` is not in the panel: the benchmark uses it to compare equal-length answers.
    """

    max_new_tokens: int = 256
    temperature: float = 0.7
    top_p: float = 0.9
    top_k: int = 50
    repetition_penalty: float = 1.0
    do_sample: bool = False
    seed: int | None = None
    min_new_tokens: int = 0

    def __post_init__(self) -> None:
        problems = list(_range_problems(self))
        if problems:
            raise ValueError("; ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GenerationParams:
        return cls(**known_fields(cls, data))

    @classmethod
    def parse(cls, texts: Mapping[str, str], **given: Any) -> GenerationParams:
        """Build from the side panel's text fields (plus `given` typed values such as do_sample);
        ValueError names every bad field."""
        values: dict[str, Any] = dict(given)
        problems: list[str] = []
        for name, text in texts.items():
            try:
                values[name] = _parse_field(name, text.strip())
            except ValueError as exc:
                problems.append(str(exc))
        if problems:
            raise ValueError("; ".join(problems))
        return cls.from_dict(values)

    def generate_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `model.generate` (sampling knobs only when sampling)."""
        kwargs: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens,
            "do_sample": self.do_sample,
            "repetition_penalty": self.repetition_penalty,
        }
        if self.min_new_tokens:
            kwargs["min_new_tokens"] = self.min_new_tokens
        if self.do_sample:
            kwargs.update(temperature=self.temperature, top_p=self.top_p, top_k=self.top_k)
        return kwargs


_INTS = {"max_new_tokens", "top_k", "min_new_tokens"}
_FLOATS = {"temperature", "top_p", "repetition_penalty"}


def _parse_field(name: str, text: str) -> Any:
    if name == "seed":
        if not text:
            return None
        return _number(name, text, int)
    if name in _INTS:
        return _number(name, text, int)
    if name in _FLOATS:
        return _number(name, text, float)
    raise ValueError(f"unknown parameter {name!r}")


def _number(name: str, text: str, kind: type) -> Any:
    try:
        return kind(text)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ValueError(f"{name} must be {what}, not {text!r}") from None


def _range_problems(p: GenerationParams) -> list[str]:
    checks = [
        (1 <= p.max_new_tokens <= 32768, "max_new_tokens must be between 1 and 32768"),
        (0 < p.temperature <= 10, "temperature must be above 0 and at most 10"),
        (0 < p.top_p <= 1, "top_p must be above 0 and at most 1"),
        (p.top_k >= 0, "top_k must be 0 (off) or more"),
        (0 < p.repetition_penalty <= 10, "repetition_penalty must be above 0 and at most 10"),
        (p.seed is None or 0 <= p.seed < 2**32, "seed must be empty (random) or between 0 and 4294967295"),
        (0 <= p.min_new_tokens <= p.max_new_tokens, "min_new_tokens must be between 0 and max_new_tokens"),
    ]
    return [message for ok, message in checks if not ok]
