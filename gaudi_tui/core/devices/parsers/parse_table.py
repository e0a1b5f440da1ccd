"""The default `hl-smi` table (the nvidia-smi-like box) → a Reading.

Handles the drift seen across hl-smi 1.4–1.24: `Mib`/`MiB`, `Volatile Uncorr. ECC` vs
`Volatile Uncor-Events`, Perf `N/A`/`P0`, `84W / 600W` vs `96W /  600W`, indentation from pasting,
and process rows that are boxed, unboxed (no closing `|`, trailing spaces) or wrapped onto a
second line. Each card takes two lines:

    |   0  HL-225              N/A  | 0000:43:00.0     N/A |                   0  |
    | N/A   30C   N/A    84W / 600W |    768MiB / 98304MiB |     0%           N/A |
"""

from __future__ import annotations

import re
from typing import Any

from gaudi_tui.core.devices.model import Device, DeviceProcess
from gaudi_tui.core.devices.parsers import values as v
from gaudi_tui.core.devices.reading import Reading, make_device

_HL_SMI_VERSION = re.compile(r"HL-SMI\s+Version\s*:\s*(\S+)", re.IGNORECASE)
_DRIVER_VERSION = re.compile(r"(?<!Nic )Driver\s+Version\s*:\s*(\S+)", re.IGNORECASE)
_BUS = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]$")
_TEMP = re.compile(r"(?<![\d.])(-?\d{1,9}(?:\.\d{1,9})?)\s*C\b")
_POWER = re.compile(r"(\d+(?:\.\d+)?|N/A)\s*W?\s*/\s*(\d+(?:\.\d+)?|N/A)\s*W?", re.IGNORECASE)
_MEMORY = re.compile(r"(?<!\d)(\d{1,18})\s*(Mi?B)?\s*/\s*(\d{1,18})(?!\d)\s*(Mi?B)?", re.IGNORECASE)
_PERCENT = re.compile(r"(?<![\d.])(\d{1,9}(?:\.\d{1,9})?)\s*%")
_PROCESS_START = re.compile(r"^(\d{1,9})\s+(\d{1,18}|N/A)(?:\s+(\S+))?(?:\s+(.*))?$")
"""Each number of a row at most 9 or 18 digits, and whole: 5000 digits (a damaged or hostile
output) raised ValueError and lost every card of the reading; a tail of them is no number."""
_PROCESS_MEMORY = re.compile(r"^(.*?)\s*(\d+\s*Mi?B|N/A)$", re.IGNORECASE)


def looks_like_table(text: str) -> bool:
    return bool(_HL_SMI_VERSION.search(text)) or "Compute Processes" in text or "Bus-Id" in text


def _cells(line: str) -> list[str]:
    """The `|`-separated cells of a box line, outer bars removed."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    return body.split("|")


def _first_line(cells: list[str]) -> dict[str, Any] | None:
    """`|   0  HL-225   N/A  | 0000:43:00.0  N/A |   0  |` → index, name, bus, ECC; else None."""
    if len(cells) < 2:
        return None
    tokens = cells[0].split()
    if len(tokens) < 2 or not tokens[0].isdigit() or len(tokens[0]) > 9:
        return None
    bus_tokens = cells[1].split()
    bus = bus_tokens[0] if bus_tokens else None
    if bus is None or not (_BUS.match(bus) or bus.upper() == "N/A"):
        return None
    ecc = v.integer(cells[2].split()[0]) if len(cells) > 2 and cells[2].split() else None
    return {
        "index": int(tokens[0]),
        "name": tokens[1],
        "bus_id": v.text_or_none(bus),
        "uncorrected_errors": ecc,
    }


def _second_line(cells: list[str]) -> dict[str, Any]:
    """`| N/A 30C N/A 84W / 600W | 768MiB / 98304MiB | 0% N/A |` → temp, power, memory, util."""
    found: dict[str, Any] = {}
    if temp := _TEMP.search(cells[0]):
        found["temperature_c"] = float(temp.group(1))
    if power := _POWER.search(cells[0]):
        found["power_draw_w"] = v.number(power.group(1))
        found["power_cap_w"] = v.number(power.group(2))
    if len(cells) > 1 and (memory := _MEMORY.search(cells[1])):
        found["memory_used_mib"] = int(memory.group(1))
        found["memory_total_mib"] = int(memory.group(3))
    if len(cells) > 2 and (util := _PERCENT.search(cells[2])):
        found["utilization_pct"] = float(util.group(1))
    return found


def _process(row: str) -> DeviceProcess | None:
    """A joined process row `0  618796  C  ray::ServeRepli  26330MiB` → DeviceProcess (None if idle)."""
    match = _PROCESS_START.match(row.strip())
    if not match:
        return None
    index, pid, _kind, rest = match.groups()
    if not pid.isdigit():
        return None
    rest = (rest or "").strip()
    memory = None
    if tail := _PROCESS_MEMORY.match(rest):
        rest, memory = tail.group(1).strip(), v.mib(tail.group(2))
    return DeviceProcess(index=int(index), pid=int(pid), name=rest or "?", memory_mib=memory)


def _process_rows(lines: list[str]) -> tuple[list[DeviceProcess], list[str]]:
    """Rows of the Compute Processes box; a line not starting a row continues the previous one."""
    rows: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or set(stripped) <= set("+|=-"):
            continue
        if "AIP" in stripped and "PID" in stripped:
            continue
        body = " ".join(cell.strip() for cell in _cells(stripped) if cell.strip())
        if _PROCESS_START.match(body):
            rows.append(body)
        elif rows:
            rows[-1] += " " + body
    processes = [p for p in (_process(r) for r in rows) if p is not None]
    errors = [f"unreadable process row {r!r}" for r in rows if not _PROCESS_START.match(r)]
    return processes, errors


def parse_table(text: str) -> Reading:
    lines = text.splitlines()
    hl_smi = _HL_SMI_VERSION.search(text)
    driver = _DRIVER_VERSION.search(text)
    devices: list[Device] = []
    errors: list[str] = []
    pending: dict[str, Any] | None = None
    process_start = len(lines)
    for number, line in enumerate(lines):
        if "Processes" in line and "|" in line:
            process_start = number + 1
            break
        cells = _cells(line)
        if pending is not None:
            if len(cells) >= 2:
                pending.update(_second_line(cells))
                devices.append(make_device(pending.pop("index"), pending))
                pending = None
                continue
            if line.strip() and not set(line.strip()) <= set("+|=-"):
                errors.append(f"card {pending['index']}: second line missing")
                devices.append(make_device(pending.pop("index"), pending))
                pending = None
        first = _first_line(cells)
        if first is not None:
            pending = first
    if pending is not None:
        errors.append(f"card {pending['index']}: second line missing (output cut short?)")
        devices.append(make_device(pending.pop("index"), pending))
    processes, process_errors = _process_rows(lines[process_start:])
    if not devices:
        errors.append("no card rows found in the hl-smi table")
    return Reading(
        kind="table",
        devices=tuple(devices),
        processes=tuple(processes),
        hl_smi_version=hl_smi.group(1) if hl_smi else None,
        driver_version=driver.group(1) if driver else None,
        errors=(*errors, *process_errors),
    )
