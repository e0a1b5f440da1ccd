"""Card values recorded in the real hl-smi samples, for the fake `hl-smi` and the fake `pyhlml`.

Written independently of gaudi_tui's parsers (plain regexes for the recorded forms only), so a
parser bug cannot hide behind a fake that shares it. Each card is a dict keyed by hl-smi's
`-Q` field names; values are strings as hl-smi prints them with `nounits`, or "N/A".
"""

from __future__ import annotations

import os
import re
from pathlib import Path

SAMPLES = Path(
    os.environ.get("FAKE_HLSMI_SAMPLES_DIR")
    or Path(__file__).resolve().parents[2] / "gaudi_tui" / "data" / "hl-smi"
)
DEFAULT_SAMPLE = "gaudi2-hl225-x8-1.20.0-busy-table.txt"
DEFAULT_MODULES = "gaudi2e-index-module-1.24.0.csv"
UNITS = {
    "memory.used": "MiB",
    "memory.total": "MiB",
    "memory.free": "MiB",
    "power.draw": "W",
    "power.max": "W",
    "temperature.aip": "C",
    "utilization.aip": "%",
}

_LINE1 = re.compile(r"^\|\s*(\d+)\s+(HL-\S+)\s+\S+\s*\|\s*(\S+)\s+\S+\s*\|\s*(\S+)\s*\|")
_LINE2 = re.compile(
    r"^\|\s*\S+\s+(\d+)C\s+\S+\s+(\d+)W\s*/\s*(\d+)W\s*\|\s*(\d+)Mi[bB]\s*/\s*(\d+)Mi[bB]\s*\|\s*(\d+)%"
)
_VERSION = re.compile(r"^\W*(HL-SMI|Driver) Version\s*:\s+(\S+)", re.MULTILINE)


def sample_path(name: str) -> Path:
    path = Path(name)
    return path if path.is_absolute() else SAMPLES / name


def read_text(name: str) -> str:
    return sample_path(name).read_text(encoding="utf-8")


def versions(text: str) -> dict[str, str]:
    return {kind: value for kind, value in _VERSION.findall(text)}


def cards_from_table(text: str) -> list[dict[str, str]]:
    lines = [line.strip() for line in text.splitlines()]
    driver = versions(text).get("Driver", "N/A")
    cards = []
    for first, second in zip(lines, lines[1:], strict=False):
        head, tail = _LINE1.match(first), _LINE2.match(second)
        if not (head and tail):
            continue
        index, name, bus, ecc = head.groups()
        temp, draw, cap, used, total, util = tail.groups()
        cards.append(
            {
                "index": index,
                "name": name,
                "bus_id": bus,
                "uuid": "N/A",
                "serial": "N/A",
                "driver_version": driver,
                "temperature.aip": temp,
                "power.draw": draw,
                "power.max": cap,
                "memory.used": used,
                "memory.total": total,
                "memory.free": str(int(total) - int(used)),
                "utilization.aip": util,
                "ecc.errors.uncorrected.volatile.total": ecc,
                "ecc.errors.uncorrected.aggregate.total": ecc,
            }
        )
    return cards


def cards_from_csv(text: str) -> list[dict[str, str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    fields = [re.sub(r"\s*\[.*\]$", "", cell.strip()) for cell in lines[0].split(",")]
    cards = []
    for number, line in enumerate(lines[1:]):
        card = {"index": str(number), "bus_id": "N/A", "driver_version": "N/A", "power.max": "N/A"}
        card.update(zip(fields, (cell.strip() for cell in line.split(",")), strict=False))
        if "memory.total" in card and "memory.used" in card:
            card["memory.free"] = str(int(card["memory.total"]) - int(card["memory.used"]))
        cards.append(card)
    return cards


def module_map(name: str) -> dict[str, str]:
    lines = [line for line in read_text(name).splitlines() if line.strip()][1:]
    return dict(tuple(cell.strip() for cell in line.split(",")) for line in lines)  # type: ignore[misc]


def cards(sample: str, modules: str | None = DEFAULT_MODULES) -> list[dict[str, str]]:
    """The cards of one sample, with module IDs from an `index,module_id` sample when it fits."""
    text = read_text(sample)
    found = cards_from_csv(text) if sample.endswith(".csv") else cards_from_table(text)
    mapping = module_map(modules) if modules else {}
    if len(mapping) != len(found):
        mapping = {}
    for card in found:
        card["module_id"] = mapping.get(card["index"], card["index"])
    return found


_SECTION = re.compile(r"^=+\s*(\S+)\s*=+\s*$")


def nic_sections(text: str) -> dict[str, list[str]]:
    """A looped `-n link`/`-n ports` sample (`=== <bus> ===` then that card's `port N: …` lines) → bus → lines."""
    sections: dict[str, list[str]] = {}
    bus = "?"
    for line in text.splitlines():
        if match := _SECTION.match(line.strip()):
            bus = match.group(1)
        elif line.strip():
            sections.setdefault(bus, []).append(line.strip())
    return sections
