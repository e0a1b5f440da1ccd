"""`hl-smi -Q <fields> -f csv[,noheader][,nounits] [-l N]` output → a Reading.

Cells are separated by `, `; a header names the fields (with units in brackets, kept even with
`nounits`); values may carry units (`98304 MiB`, `226 W`, `36 C`, `0 %`) or be `N/A`. With `-l N`
the rows of every refresh follow each other with no separator: a refresh ends where an index
(or, without an index column, a UUID or bus ID) comes round again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gaudi_tui.core.devices.csv_query import BASIC_FIELDS, QUERY_FIELDS
from gaudi_tui.core.devices.model import Device
from gaudi_tui.core.devices.parsers import values as v
from gaudi_tui.core.devices.reading import Reading, make_device

INDEX_MODULE_FIELDS: tuple[str, ...] = ("index", "module_id")

_CONVERT: dict[str, tuple[str, Callable[[str | None], Any]]] = {
    "index": ("index", v.integer),
    "module_id": ("module_id", v.integer),
    "bus_id": ("bus_id", v.text_or_none),
    "name": ("name", v.text_or_none),
    "uuid": ("uuid", v.text_or_none),
    "utilization.aip": ("utilization_pct", v.number),
    "memory.used": ("memory_used_mib", v.mib),
    "memory.total": ("memory_total_mib", v.mib),
    "memory.free": ("_memory_free_mib", v.mib),
    "power.draw": ("power_draw_w", v.number),
    "power.max": ("power_cap_w", v.number),
    "power.limit": ("power_cap_w", v.number),
    "temperature.aip": ("temperature_c", v.number),
    "ecc.errors.uncorrected.volatile.total": ("uncorrected_errors", v.integer),
    "ecc.errors.uncorrected.aggregate.total": ("_uncorrected_aggregate", v.integer),
    "driver_version": ("_driver_version", v.text_or_none),
}
_VALUES: dict[tuple[str, str], Any] = {}
"""Each (field, cell text) read so far → its value: the live poller's refreshes repeat most cells
(bus IDs, names, HBM, an idle card's figures), so a refresh converts only the cells that changed."""
_VALUES_MAX = 4096
_UNREAD = object()
_HEADER_CELL = re.compile(r"^[a-z][a-z0-9_.\-]*(\s*\[[^\]]*\])?$")
_UNIT = re.compile(r"\s*\[[^\]]*\]$")


def split_cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().split(",")]


def header_fields(line: str) -> list[str] | None:
    """The field names if `line` is a CSV header (`power.draw [W]` → `power.draw`), else None."""
    cells = split_cells(line)
    if len(cells) < 1 or not all(_HEADER_CELL.match(c) for c in cells):
        return None
    return [_UNIT.sub("", c) for c in cells]


@dataclass(frozen=True)
class Row:
    device: Device | None
    driver_version: str | None = None
    error: str | None = None


def parse_row(fields: Sequence[str], line: str, fallback_index: int) -> Row:
    """One data line → a Device (index from the row, else `fallback_index`), or an error."""
    cells = split_cells(line)
    if len(cells) != len(fields):
        return Row(None, error=f"expected {len(fields)} values, got {len(cells)}: {_clip(line)!r}")
    found: dict[str, Any] = {}
    for name, cell in zip(fields, cells, strict=True):
        attr, convert = _CONVERT.get(name, ("", v.text_or_none))
        if attr:
            value = _VALUES.get((name, cell), _UNREAD)
            if value is _UNREAD:
                if len(_VALUES) >= _VALUES_MAX:
                    _VALUES.clear()
                value = _VALUES[name, cell] = convert(cell)
            found[attr] = value
    if "index" in fields and found.get("index") is None:
        return Row(None, error=f"no card index in {_clip(line)!r}")
    if "index" not in fields and all(value is None for value in found.values()):
        return Row(None, error=f"no readable value in {_clip(line)!r}")
    free = found.pop("_memory_free_mib", None)
    if (
        found.get("memory_used_mib") is None
        and free is not None
        and found.get("memory_total_mib") is not None
    ):
        found["memory_used_mib"] = found["memory_total_mib"] - free
    aggregate = found.pop("_uncorrected_aggregate", None)
    if found.get("uncorrected_errors") is None:
        found["uncorrected_errors"] = aggregate
    driver = found.pop("_driver_version", None)
    index = found.pop("index", None)
    return Row(make_device(fallback_index if index is None else index, found), driver_version=driver)


def _clip(line: str, width: int = 60) -> str:
    line = line.strip()
    return line if len(line) <= width else line[: width - 1] + "…"


def guess_fields(cells: list[str]) -> tuple[str, ...] | None:
    """Field names for a header-less CSV: `index,module_id` (two integers) or gaudi-tui's own query."""
    if len(cells) == 2 and all(c.isdigit() for c in cells):
        return INDEX_MODULE_FIELDS
    for known in (QUERY_FIELDS, BASIC_FIELDS):
        if len(cells) == len(known):
            return known
    return None


def _identity(device: Device, fields: Sequence[str]) -> object:
    if "index" in fields:
        return device.index
    return device.uuid or device.bus_id


def parse_csv(text: str, fields: Sequence[str] | None = None) -> Reading:
    """A whole CSV capture (header optional, one or many refreshes) → the last refresh."""
    lines = [line for line in text.splitlines() if line.strip()]
    errors: list[str] = []
    if lines and (named := header_fields(lines[0])) is not None:
        fields = named
        lines = lines[1:]
    if fields is None:
        if not lines:
            return Reading(kind="csv", errors=("empty CSV",))
        fields = guess_fields(split_cells(lines[0]))
        if fields is None:
            return Reading(
                kind="csv",
                errors=(
                    f"CSV without a header and {len(split_cells(lines[0]))} columns: cannot tell the fields; "
                    "save it with a header (`-f csv`) or pass --fields",
                ),
            )
    fields = tuple(fields)
    ticks: list[list[Device]] = [[]]
    seen: set[object] = set()
    driver = None
    for line in lines:
        row = parse_row(fields, line, fallback_index=len(ticks[-1]))
        if row.device is None:
            errors.append(row.error or "unreadable line")
            continue
        device = row.device
        key = _identity(device, fields)
        if key is not None and key in seen:
            ticks.append([])
            seen.clear()
            if "index" not in fields:
                device = replace(device, index=0)
        if key is not None:
            seen.add(key)
        ticks[-1].append(device)
        driver = row.driver_version or driver
    kind = "index-module" if set(fields) <= set(INDEX_MODULE_FIELDS) else "csv"
    return Reading(
        kind=kind,
        devices=tuple(ticks[-1]),
        driver_version=driver,
        errors=tuple(errors),
        samples=len([t for t in ticks if t]),
    )
