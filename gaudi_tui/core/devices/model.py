"""Immutable values the device sources produce and every screen and command reads.

`DeviceSnapshot.to_json()` is the `gaudi-tui devices --json` schema in docs/architecture.md: every key is
always present, unknown values are None.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

Source = Literal["hl-smi", "hlml", "nvml", "file", "replay", "none"]

PRODUCTS = {
    "HL-205": "Gaudi",
    "HL-225": "Gaudi 2",
    "HL-288E": "Gaudi 2E",
    "HL-325L": "Gaudi 3",
    "HL-328": "Gaudi 3",
    "HL-338": "Gaudi 3",
}


def product_for(name: str | None) -> str | None:
    """Marketing name for a board name (`HL-225` → `Gaudi 2`); None when unknown."""
    if not name:
        return None
    key = name.strip().upper()
    for board, product in PRODUCTS.items():
        if key == board or key.startswith(board + " ") or key.startswith(board + "-"):
            return product
    return None


@dataclass(frozen=True)
class Device:
    index: int
    name: str
    module_id: int | None = None
    product: str | None = None
    bus_id: str | None = None
    uuid: str | None = None
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    power_draw_w: float | None = None
    power_cap_w: float | None = None
    temperature_c: float | None = None
    utilization_pct: float | None = None
    uncorrected_errors: int | None = None
    numa_node: int | None = None


@dataclass(frozen=True)
class DeviceProcess:
    index: int
    pid: int
    name: str
    memory_mib: int | None = None
    user: str | None = None


@dataclass(frozen=True)
class DeviceSnapshot:
    source: Source
    devices: tuple[Device, ...] = ()
    processes: tuple[DeviceProcess, ...] = ()
    hl_smi_version: str | None = None
    driver_version: str | None = None
    errors: tuple[str, ...] = field(default_factory=tuple)
    recordings: tuple[str, ...] = ()
    """With source "replay": the recorded hl-smi files (in gaudi_tui/data/hl-smi) this came from."""

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "hl_smi_version": self.hl_smi_version,
            "driver_version": self.driver_version,
            "devices": [asdict(d) for d in self.devices],
            "processes": [asdict(p) for p in self.processes],
            "errors": list(self.errors),
            "recordings": list(self.recordings),
        }
