"""`hl-smi -L` / `hl-smi -q` detail blocks ("HL-SMI LOG") → a Reading.

One block per card starts with `[N] AIP (accelN) <bus id>`; values are `Key : value` lines. The
temperature is the hottest "On Chip" sensor (as nvtop reports it); power draw and limit add up the
54 V and 12 V rails, which is what the table's `Pwr:Usage/Cap` shows.
"""

from __future__ import annotations

import re
from typing import Any

from gaudi_tui.core.devices.parsers import values as v
from gaudi_tui.core.devices.reading import Reading, make_device

_BLOCK = re.compile(r"^\[(\d{1,9})\]\s+AIP\s*(?:\(accel(\d{1,9})\))?\s*(\S+)?")
_KEY_VALUE = re.compile(r"^(?:\[\s*\d+\]\s*)?([^:]+?)\s*:\s*(.*)$")
_HEADER = re.compile(r"^\s*(Driver Version|HL-SMI Version)\s*:\s*(\S+)", re.MULTILINE)
_TOP_LEVEL = {
    "Product Name": ("name", v.text_or_none),
    "Module ID": ("module_id", v.integer),
    "AIP UUID": ("uuid", v.text_or_none),
    "Bus Id": ("bus_id", v.text_or_none),
}


def looks_like_detail(text: str) -> bool:
    return "HL-SMI LOG" in text or bool(re.search(r"^\s*\[\d+\]\s+AIP\b", text, re.MULTILINE))


def _finish(block: dict[str, Any], errors: list[str]) -> None:
    chips = block.pop("_on_chip", [])
    if chips:
        block["temperature_c"] = max(chips)
    for key, target in (("_draws", "power_draw_w"), ("_limits", "power_cap_w")):
        rail_values = block.pop(key, [])
        if rail_values:
            block[target] = float(sum(rail_values))
    status = block.pop("_status", None)
    if status and status.lower() != "operational":
        errors.append(f"card {block['index']}: module status is {status!r}")


def parse_detail(text: str) -> Reading:
    header = dict(_HEADER.findall(text))
    blocks: list[dict[str, Any]] = []
    errors: list[str] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if start := _BLOCK.match(line):
            if blocks:
                _finish(blocks[-1], errors)
            blocks.append({"index": int(start.group(2) or start.group(1)), "bus_id": start.group(3)})
            section = ""
            continue
        if not blocks:
            continue
        block = blocks[-1]
        pair = _KEY_VALUE.match(line)
        if pair is None:
            section = line
            continue
        key, value = pair.group(1).strip(), pair.group(2).strip()
        if not value:
            section = key
            continue
        if key in _TOP_LEVEL:
            attr, convert = _TOP_LEVEL[key]
            if attr != "bus_id" or block.get("bus_id") is None:
                block[attr] = convert(value)
        elif key == "Module status":
            block["_status"] = value
        elif section == "Memory Usage" and key in ("Total", "Used"):
            block["memory_total_mib" if key == "Total" else "memory_used_mib"] = v.mib(value)
        elif key.startswith("On Chip") and (temp := v.number(value)) is not None:
            block.setdefault("_on_chip", []).append(temp)
        elif key == "Power Draw" and (draw := v.number(value)) is not None:
            block.setdefault("_draws", []).append(draw)
        elif key == "Power Limit" and (limit := v.number(value)) is not None:
            block.setdefault("_limits", []).append(limit)
    if blocks:
        _finish(blocks[-1], errors)
    else:
        errors.append("no `[N] AIP` card block found in the hl-smi detail output")
    devices = tuple(make_device(b.pop("index"), b) for b in blocks)
    return Reading(
        kind="detail",
        devices=devices,
        hl_smi_version=header.get("HL-SMI Version"),
        driver_version=header.get("Driver Version"),
        errors=tuple(errors),
    )
