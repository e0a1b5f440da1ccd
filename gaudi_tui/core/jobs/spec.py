"""The job spec: its presets, its coercion and its text forms (the dataclass itself, every setting
with its default and help, is `jobspec.JobSpec`; it is imported from here).

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
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Literal, cast

from gaudi_tui.core.jobs import spec_text
from gaudi_tui.core.jobs.jobspec import JobSpec
from gaudi_tui.core.jobs.spec_coerce import coerce_to
from gaudi_tui.core.jobs.spec_fields import ARGV_FIELDS
from gaudi_tui.core.untrusted.data import checked
from gaudi_tui.core.untrusted.files import read_bounded

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

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


ROW_FIELDS = ("name", "max_steps", "target", "kind", "processes", "device")
"""The fields a row of the job list shows (and its kind and target are found by)."""


def from_toml(text: str) -> JobSpec:
    return from_mapping(_table(text))


def _table(text: str) -> dict[str, Any]:
    """The TOML table of a spec, holding only what untrusted.data accepts (64-bit integers, bounded
    nesting, text; `inf` is TOML's and a spec's: epochs = inf), else a SpecError, as for text that
    is not TOML."""
    try:
        quick = spec_text.loads(text)  # the form to_toml writes, without tomllib (a list of 1,000 runs)
        return checked(quick if quick is not None else tomllib.loads(text), what="the spec", infinite=True)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"not valid TOML: {exc}") from None
    except RecursionError:
        raise SpecError("not valid TOML: it nests too deeply") from None
    except ValueError as exc:  # a number past what Python reads (4300 digits), or what `checked` refuses
        raise SpecError(f"not a spec gaudi-tui can read: {str(exc)[:120]}") from None


def load(path: Path) -> JobSpec:
    """The spec of a run folder, every value coerced and checked."""
    return _load(path, row=False)


def load_row(path: Path) -> JobSpec:
    """What the job list needs of a run folder's spec: its ROW_FIELDS, coerced and checked, the rest
    left at the defaults (a list of a thousand runs reads this; a run opened, resumed or launched
    reads the whole spec). Text that is not TOML, an unknown key or a bad value of these fields is
    the SpecError that `load` gives."""
    return _load(path, row=True)


def _load(path: Path, row: bool) -> JobSpec:
    try:
        text = read_bounded(path, what="spec.toml").decode("utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read the spec {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # larger than a spec can be, or not UTF-8
        raise SpecError(f"cannot read the spec {path}: {str(exc)[:120]}") from None
    try:
        data = _table(text)
        if not row:
            return from_mapping(data)
        for unknown in data.keys() - set(field_names()):
            coerce(unknown, data[unknown])  # raises, naming the setting it may have meant
        return from_mapping({name: data[name] for name in ROW_FIELDS if name in data})
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from None
