"""Cards through HLML (`pyhlml`, optional extra `gaudi`), in-process: no child, does not acquire cards.

Caveats (docs/hl-smi-facts.md names their sources): several HLML calls go through the card
firmware and are slow, so the static facts (name, bus ID, UUID, module ID, index, power limit) are read once at open and only
memory, utilization and power are read every tick; `hlmlDeviceGetTemperature` leaks memory on
every call, so the temperature comes from the hwmon "On Chip" sensors in sysfs, and only where
those are missing from HLML at most once every `SLOW_EVERY` ticks (as are the ECC counters).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gaudi_tui.core.devices.model import Device
from gaudi_tui.core.devices.reading import Reading, make_device
from gaudi_tui.core.devices.sources import sysfs
from gaudi_tui.core.devices.sources.library import LibrarySource, SourceUnavailable, load, text

SLOW_EVERY = 10
MEMORY_ERROR_UNCORRECTED = 1  # hlml.h: HLML_MEMORY_ERROR_TYPE_UNCORRECTED
VOLATILE_ECC = 0  # hlml.h: HLML_VOLATILE_ECC
TEMPERATURE_ON_AIP = 0  # hlml.h: HLML_TEMPERATURE_ON_AIP


@dataclass
class _Card:
    handle: Any
    static: Device
    temperature: float | None = None
    errors: int | None = None


class HlmlSource(LibrarySource):
    def __init__(self, sys_root: str = "/sys") -> None:
        self.sys_root = sys_root
        self.ticks = 0
        self.lib = load("pyhlml", "gaudi")
        try:
            self.lib.hlmlInit()
        except Exception as error:  # pyhlml raises HLMLError subclasses; libhlml missing is one of them
            raise SourceUnavailable(f"HLML could not start: {error}") from error
        try:
            self.driver_version = text(self.lib.hlmlGetDriverVersion())
            self.cards = [self._open_card(i) for i in range(self.lib.hlmlDeviceGetCount())]
        except Exception as error:
            self.close()
            raise SourceUnavailable(f"HLML could not list the cards: {error}") from error

    def _open_card(self, position: int) -> _Card:
        handle = self.lib.hlmlDeviceGetHandleByIndex(position)
        pci = self.optional("hlmlDeviceGetPCIInfo", handle)
        bus_id = text(getattr(pci, "bus_id", None))
        index = self.optional("hlmlDeviceGetMinorNumber", handle)
        limit = self.optional("hlmlDeviceGetPowerManagementLimit", handle)
        static = make_device(
            position if index is None else int(index),
            {
                "name": text(self.lib.hlmlDeviceGetName(handle)),
                "module_id": self.optional("hlmlDeviceGetModuleID", handle),
                "bus_id": bus_id,
                "uuid": text(self.optional("hlmlDeviceGetUUID", handle)),
                "power_cap_w": None if limit is None else limit / 1000.0,
                "numa_node": sysfs.numa_node(bus_id, self.sys_root),
            },
        )
        return _Card(handle, static)

    def read(self) -> Reading:
        """One tick. An HLML error (card lost, driver gone) propagates: the caller falls back."""
        slow = self.ticks % SLOW_EVERY == 0
        self.ticks += 1
        devices = []
        for card in self.cards:
            memory = self.lib.hlmlDeviceGetMemoryInfo(card.handle)
            utilization = self.lib.hlmlDeviceGetUtilizationRates(card.handle)
            power_mw = self.optional("hlmlDeviceGetPowerUsage", card.handle)
            temperature = sysfs.onchip_temperature(card.static.index, self.sys_root)
            if temperature is None and slow:
                temperature = self.optional("hlmlDeviceGetTemperature", card.handle, TEMPERATURE_ON_AIP)
            if temperature is not None:
                card.temperature = float(temperature)
            if slow:
                errors = self.optional(
                    "hlmlDeviceGetTotalECCErrors", card.handle, MEMORY_ERROR_UNCORRECTED, VOLATILE_ECC
                )
                card.errors = None if errors is None else int(errors)
            devices.append(
                replace(
                    card.static,
                    memory_used_mib=int(memory.used / 2**20),
                    memory_total_mib=int(memory.total / 2**20),
                    utilization_pct=float(min(100, max(0, utilization.aip))),
                    power_draw_w=None if power_mw is None else power_mw / 1000.0,
                    temperature_c=card.temperature,
                    uncorrected_errors=card.errors,
                )
            )
        return Reading(kind="hlml", devices=tuple(devices), driver_version=self.driver_version)

    def close(self) -> None:
        self.optional("hlmlShutdown")
