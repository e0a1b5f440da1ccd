"""What one parser read from one hl-smi output, and how several readings combine into a snapshot.

Every parser returns a `Reading`: the cards it saw (as partial `Device`s keyed by index), any
process rows, versions, the module → NUMA/CPU affinity from `topo`, NIC port states, and errors
for the lines it could not read. Parsers never raise; a `Reading` is always returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

from gaudi_tui.core.devices.links import card_links
from gaudi_tui.core.devices.model import Device, DeviceProcess, DeviceSnapshot, Source, product_for

DEVICE_FIELDS = tuple(f.name for f in fields(Device))

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True)
class Reading:
    kind: str
    devices: tuple[Device, ...] = ()
    processes: tuple[DeviceProcess, ...] = ()
    hl_smi_version: str | None = None
    driver_version: str | None = None
    numa_by_module: Mapping[int, int] = field(default_factory=dict)
    cpus_by_module: Mapping[int, str] = field(default_factory=dict)
    nic_ports: Mapping[str, Mapping[int, str]] = field(default_factory=dict)
    """bus ID → port → state (`UP`, `DOWN`) from `hl-smi -n link`."""
    nic_port_types: Mapping[str, Mapping[int, str]] = field(default_factory=dict)
    """bus ID → port → `internal`/`external` from `hl-smi -n ports`."""
    errors: tuple[str, ...] = ()
    samples: int = 1
    """How many refreshes a looped (`-l`) CSV capture held; the devices are from the last one."""

    def to_snapshot(self, source: Source, extra_errors: Iterable[str] = ()) -> DeviceSnapshot:
        devices = tuple(
            replace(d, numa_node=self.numa_by_module[d.module_id])
            if d.module_id is not None and _needs_numa(d, self)
            else d
            for d in sorted(self.devices, key=lambda d: d.index)
        )
        links, link_errors = card_links(self.nic_ports, self.nic_port_types, devices)
        return DeviceSnapshot(
            source=source,
            devices=devices,
            processes=self.processes,
            hl_smi_version=self.hl_smi_version,
            driver_version=self.driver_version,
            errors=(*self.errors, *extra_errors),
            links=links,
            link_errors=link_errors,
        )


def _needs_numa(device: Device, reading: Reading) -> bool:
    return (
        device.numa_node is None
        and device.module_id is not None
        and device.module_id in reading.numa_by_module
    )


def make_device(index: int, values: Mapping[str, Any]) -> Device:
    """A Device from parsed values (unknown keys ignored); the product name follows the board name."""
    known = {k: v for k, v in values.items() if k in DEVICE_FIELDS and k != "index" and v is not None}
    name = known.pop("name", None) or ""
    product = known.pop("product", None) or product_for(name)
    return Device(index=index, name=name, product=product, **known)


def fill_device(base: Device, other: Device) -> Device:
    """`base` with its unknown (None/empty) fields taken from `other`."""
    changes = {}
    for name in DEVICE_FIELDS:
        mine = getattr(base, name)
        if mine is None or mine == "":
            theirs = getattr(other, name)
            if theirs is not None and theirs != "":
                changes[name] = theirs
    if "name" in changes and base.product is None:
        changes.setdefault("product", product_for(changes["name"]))
    return replace(base, **changes) if changes else base


def merge(readings: Iterable[Reading]) -> Reading:
    """Combine readings (first wins per value): e.g. a table, an `index,module_id` CSV and `topo`."""
    readings = list(readings)
    by_index: dict[int, Device] = {}
    processes: dict[tuple[int, int], DeviceProcess] = {}
    numa: dict[int, int] = {}
    cpus: dict[int, str] = {}
    nic: dict[str, Mapping[int, str]] = {}
    nic_types: dict[str, Mapping[int, str]] = {}
    errors: list[str] = []
    hl_smi_version = driver_version = None
    for reading in readings:
        for device in reading.devices:
            known = by_index.get(device.index)
            by_index[device.index] = device if known is None else fill_device(known, device)
        for process in reading.processes:
            key = (process.index, process.pid)
            known_process = processes.get(key)
            if known_process is None:
                processes[key] = process
            else:
                processes[key] = replace(
                    known_process,
                    memory_mib=known_process.memory_mib
                    if known_process.memory_mib is not None
                    else process.memory_mib,
                    user=known_process.user or process.user,
                )
        _keep_first(numa, reading.numa_by_module)
        _keep_first(cpus, reading.cpus_by_module)
        _keep_first(nic, reading.nic_ports)
        _keep_first(nic_types, reading.nic_port_types)
        hl_smi_version = hl_smi_version or reading.hl_smi_version
        driver_version = driver_version or reading.driver_version
        errors.extend(e for e in reading.errors if e not in errors)
    kinds = [r.kind for r in readings]
    return Reading(
        kind="+".join(dict.fromkeys(kinds)) or "empty",
        devices=tuple(sorted(by_index.values(), key=lambda d: d.index)),
        processes=tuple(sorted(processes.values(), key=lambda p: (p.index, p.pid))),
        hl_smi_version=hl_smi_version,
        driver_version=driver_version,
        numa_by_module=numa,
        cpus_by_module=cpus,
        nic_ports=nic,
        nic_port_types=nic_types,
        errors=tuple(errors),
        samples=max((r.samples for r in readings), default=1),
    )


def _keep_first(into: dict[K, V], found: Mapping[K, V]) -> None:
    """Add the keys `into` lacks (earlier readings win)."""
    for key, value in found.items():
        into.setdefault(key, value)
