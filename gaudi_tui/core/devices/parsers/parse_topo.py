"""`hl-smi topo -c -N` (module ID → CPU affinity, NUMA node) → a Reading.

modID   CPU Affinity    NUMA Affinity
-----   ------------    -------------
4       40-79, 120-159          1
"""

from __future__ import annotations

import re

from gaudi_tui.core.devices.reading import Reading

_ROW = re.compile(r"^(\d{1,9})\s+(.*?)\s+(-?\d{1,9}|N/A)$")


def looks_like_topo(text: str) -> bool:
    return bool(re.search(r"^\s*modID\b", text, re.MULTILINE | re.IGNORECASE))


def parse_topo(text: str) -> Reading:
    numa: dict[int, int] = {}
    cpus: dict[int, str] = {}
    errors: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.lower().startswith("modid") or set(line) <= set("- "):
            continue
        row = _ROW.match(line)
        if row is None:
            errors.append(f"unreadable topo row {line[:60]!r}")
            continue
        module = int(row.group(1))
        cpus[module] = row.group(2).strip()
        if row.group(3) != "N/A":
            numa[module] = int(row.group(3))
    if not cpus:
        errors.append("no module rows found in `hl-smi topo` output")
    return Reading(kind="topo", numa_by_module=numa, cpus_by_module=cpus, errors=tuple(errors))
