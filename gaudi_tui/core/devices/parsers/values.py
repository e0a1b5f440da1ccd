"""Reading one value out of hl-smi text: numbers with or without units, `N/A` and friends → None."""

from __future__ import annotations

import re

_MISSING = {"", "n/a", "na", "none", "-", "[n/a]", "[not supported]", "not supported", "unknown"}
_NUMBER = re.compile(r"^\s*(-?\d{1,18}(?:\.\d{1,30})?)\s*([A-Za-z%°]*)\s*$")
"""A number as hl-smi prints one; 400 digits (a damaged or hostile file) is not one: float() reads
them as a value no card has (5000: infinity, which int() refuses)."""
_TO_MIB = {"": 1.0, "mib": 1.0, "mb": 1.0, "gib": 1024.0, "gb": 1024.0, "kib": 1 / 1024, "b": 1 / 1024**2}


def text_or_none(raw: str | None) -> str | None:
    """The stripped text, or None for an empty or `N/A`-style cell."""
    if raw is None:
        return None
    value = raw.strip()
    return None if value.lower() in _MISSING else value


def number(raw: str | None) -> float | None:
    """`226 W`, `36C`, `15 %`, `96.5` → the number; anything else → None."""
    value = text_or_none(raw)
    if value is None:
        return None
    match = _NUMBER.match(value)
    return float(match.group(1)) if match else None


def integer(raw: str | None) -> int | None:
    value = number(raw)
    return None if value is None else int(value)


def mib(raw: str | None, default_unit: str = "MiB") -> int | None:
    """A memory amount in MiB: `98304 MiB`, `512Mib`, `98304 MB` (hl-smi's MB are MiB), `96 GiB`."""
    value = text_or_none(raw)
    if value is None:
        return None
    match = _NUMBER.match(value)
    if not match:
        return None
    unit = (match.group(2) or default_unit).lower()
    factor = _TO_MIB.get(unit)
    if factor is None:
        return None
    return int(round(float(match.group(1)) * factor))
