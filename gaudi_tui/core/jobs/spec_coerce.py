"""A typed-in string or a TOML value turned into a spec field's type (a Literal's choice, bool,
int, float, str, a tuple of them, or a NAME = VALUE table), or ValueError saying why not."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, Literal

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def coerce_to(hint: Any, value: object) -> object:
    origin = typing.get_origin(hint)
    if origin is Literal:
        allowed = typing.get_args(hint)
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
        return value
    if hint is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE | _FALSE:
            return text in _TRUE
        raise ValueError(f"{value!r} is not true or false")
    if hint is int:
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not a whole number")
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, int):
            return value
        try:
            return int(str(value).strip().replace("_", ""))
        except ValueError:
            raise ValueError(f"{value!r} is not a whole number") from None
    if hint is float:
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not a number")
        try:
            return float(value if isinstance(value, (int, float)) else str(value).strip())
        except ValueError:
            raise ValueError(f"{value!r} is not a number") from None
    if hint is str:
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not text")
        return value.strip()
    if origin is tuple:
        (item,) = {a for a in typing.get_args(hint) if a is not Ellipsis}
        items = value if isinstance(value, (list, tuple)) else [p for p in str(value).split(",") if p.strip()]
        return tuple(coerce_to(item, v) for v in items)
    if origin in (Mapping, dict) or hint is Mapping:
        if isinstance(value, str):
            pairs = [p.split("=", 1) for p in value.split(",") if p.strip()]
            if any(len(p) != 2 for p in pairs):
                raise ValueError("write NAME=VALUE pairs separated by commas")
            value = {k.strip(): v.strip() for k, v in pairs}
        if not isinstance(value, Mapping):
            raise ValueError(f"{value!r} is not a table of NAME = VALUE")
        return {str(k): str(v) for k, v in value.items()}
    raise TypeError(f"unsupported field type {hint!r}")  # pragma: no cover - guarded by tests
