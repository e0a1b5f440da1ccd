"""Immutable values the device sources produce and every screen and command reads.

`DeviceSnapshot.to_json()` is the `gaudi-tui devices --json` schema in docs/architecture.md: every key is
always present, unknown values are None.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

Source = Literal["hl-smi", "hlml", "nvml", "file", "replay", "none"]
PortType = Literal["internal", "external"]

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
    """A process on a card, from hl-smi's process table, the /proc scan of card holders, or both."""

    index: int
    pid: int
    name: str
    memory_mib: int | None = None
    """Device memory, where hl-smi's table gives it (/proc does not tell it)."""
    user: str | None = None
    """None: /proc hides whose it is (another container or PID namespace)."""
    command: str | None = None
    """The full command line from /proc; None when /proc hides it."""
    started: float | None = None
    """Start time (seconds since the epoch) from /proc/PID/stat."""
    seen_by: str = "hl-smi"
    """"hl-smi", "/proc" or "hl-smi+/proc"."""


@dataclass(frozen=True)
class Port:
    number: int
    up: bool
    type: PortType | None = None
    """From `hl-smi -n ports` (or HLML's external-port mask); None when nothing said."""


@dataclass(frozen=True)
class CardLinks:
    """The NIC ports of one card: `hl-smi -n link` (and `-n ports`), or HLML."""

    index: int | None
    bus_id: str | None
    ports: tuple[Port, ...]

    @property
    def up(self) -> int:
        return sum(p.up for p in self.ports)

    @property
    def types_known(self) -> bool:
        return bool(self.ports) and all(p.type is not None for p in self.ports)

    @property
    def external_down(self) -> tuple[int, ...]:
        return tuple(p.number for p in self.ports if p.type == "external" and not p.up)

    @property
    def internal_down(self) -> tuple[int, ...]:
        return tuple(p.number for p in self.ports if p.type == "internal" and not p.up)

    @property
    def down(self) -> tuple[int, ...]:
        """Every port that is down, whatever its type (known or not)."""
        return tuple(p.number for p in self.ports if not p.up)

    def to_json(self) -> dict[str, object]:
        return {
            "index": self.index,
            "bus_id": self.bus_id,
            "ports": [{"port": p.number, "type": p.type, "up": p.up} for p in self.ports],
        }


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
    links: tuple[CardLinks, ...] = ()
    link_errors: tuple[str, ...] = ()
    """Why the links are missing or partial (hl-smi -n link failed, no -n ports, …)."""

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "hl_smi_version": self.hl_smi_version,
            "driver_version": self.driver_version,
            "devices": [asdict(d) for d in self.devices],
            "processes": [asdict(p) for p in self.processes],
            "links": [c.to_json() for c in self.links],
            "link_errors": list(self.link_errors),
            "errors": list(self.errors),
            "recordings": list(self.recordings),
        }

    def links_of(self, index: int) -> CardLinks | None:
        return next((c for c in self.links if c.index == index), None)
