"""What the kernel says about the cards, readable without root and without hl-smi.

`/sys/module/habanalabs` exists when the driver is loaded; `/sys/class/accel/accelN/device/module_id`
maps index → module ID; `/sys/bus/pci/devices/<bus id>/numa_node` gives the NUMA node; the hwmon
"On Chip" sensors give the temperature without HLML's leaking temperature call.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_NODE = re.compile(r"^(?:accel|hl)(\d+)$")


def driver_loaded(sys_root: str = "/sys") -> bool:
    return Path(sys_root, "module", "habanalabs").exists()


def accel_nodes(dev_root: str = "/dev") -> list[Path]:
    """The compute nodes `/dev/accel/accelN` (and legacy `/dev/hlN`), in index order."""
    found: list[tuple[int, Path]] = []
    for folder in (Path(dev_root, "accel"), Path(dev_root)):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            match = _NODE.match(entry.name)
            if match and (folder.name == "accel") == entry.name.startswith("accel"):
                found.append((int(match.group(1)), Path(entry.path)))
    return [path for _, path in sorted(found)]


def unusable_nodes(dev_root: str = "/dev") -> list[Path]:
    """Compute nodes this user may not open for reading and writing."""
    return [node for node in accel_nodes(dev_root) if not os.access(node, os.R_OK | os.W_OK)]


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def module_ids(sys_root: str = "/sys") -> dict[int, int]:
    """index → module ID from `/sys/class/accel/accel*/device/module_id`."""
    found: dict[int, int] = {}
    for folder in Path(sys_root, "class", "accel").glob("accel*"):
        match = _NODE.match(folder.name)
        value = _read(folder / "device" / "module_id")
        if match and value is not None and value.isdigit():
            found[int(match.group(1))] = int(value)
    return found


def numa_node(bus_id: str | None, sys_root: str = "/sys") -> int | None:
    """The NUMA node of a PCI device (`-1`, meaning none, → None)."""
    if not bus_id:
        return None
    value = _read(Path(sys_root, "bus", "pci", "devices", bus_id.lower(), "numa_node"))
    if value is None or not value.lstrip("-").isdigit() or int(value) < 0:
        return None
    return int(value)


def onchip_temperature(index: int, sys_root: str = "/sys") -> float | None:
    """The hottest hwmon sensor labelled "On Chip…" of card `index` in °C, or None."""
    hottest = None
    for label_file in Path(sys_root, "class", "accel", f"accel{index}", "device", "hwmon").glob(
        "hwmon*/temp*_label"
    ):
        label = _read(label_file) or ""
        if "chip" not in label.lower():
            continue
        raw = _read(label_file.with_name(label_file.name.replace("_label", "_input")))
        if raw is not None and raw.lstrip("-").isdigit():
            value = int(raw) / 1000.0
            hottest = value if hottest is None else max(hottest, value)
    return hottest
