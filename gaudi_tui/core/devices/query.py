"""One device snapshot from the best source that works: HLML → hl-smi → NVML → host only.

`read_once()` is what other screens and commands call (Training checks the chosen cards with it,
the Checklist the cards and their links); it never raises: every problem becomes a line in
`snapshot.errors` (or `link_errors`). On hl-smi/HLML it also reads every process on the cards
(hl-smi's table merged with /proc) and the NIC links (`hl-smi -n link`/`-n ports`, one-shot).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import replace

from gaudi_tui.core.devices import faults
from gaudi_tui.core.devices.card_processes import merge_processes
from gaudi_tui.core.devices.details import ONE_SHOT_S, read_links_hlsmi
from gaudi_tui.core.devices.faults import Fault
from gaudi_tui.core.devices.holders import find_holders
from gaudi_tui.core.devices.model import DeviceSnapshot, Source
from gaudi_tui.core.devices.parsers.parse_table import parse_table
from gaudi_tui.core.devices.reading import Reading, merge
from gaudi_tui.core.devices.sources import hlsmi_once, sysfs
from gaudi_tui.core.devices.sources.hlml import HlmlSource
from gaudi_tui.core.devices.sources.library import SourceUnavailable
from gaudi_tui.core.devices.sources.nvml import NvmlSource

HL_SMI = "hl-smi"


def with_kernel_facts(
    reading: Reading, sys_root: str = "/sys", numa_of_bus: dict[str | None, int | None] | None = None
) -> Reading:
    """Fill module IDs and NUMA nodes hl-smi did not give from sysfs (and topo's module → NUMA).
    `numa_of_bus`: the sysfs NUMA node of each bus ID read so far, kept by a feed that asks every
    refresh (a card's NUMA node does not change while it is on the bus)."""
    modules = sysfs.module_ids(sys_root) if any(d.module_id is None for d in reading.devices) else {}
    read = {} if numa_of_bus is None else numa_of_bus
    devices = []
    for device in reading.devices:
        module = device.module_id if device.module_id is not None else modules.get(device.index)
        numa = device.numa_node
        if numa is None:
            numa = reading.numa_by_module.get(module) if module is not None else None
        if numa is None:
            if device.bus_id not in read:  # read once per bus ID
                read[device.bus_id] = sysfs.numa_node(device.bus_id, sys_root)
            numa = read[device.bus_id]
        same = module == device.module_id and numa == device.numa_node
        devices.append(device if same else replace(device, module_id=module, numa_node=numa))
    return replace(reading, devices=tuple(devices))


def _read_library(
    kind: type[HlmlSource] | type[NvmlSource],
    sys_root: str,
    failed: Callable[[str], Fault],
    errors: list[str],
) -> Reading | None:
    """One reading through HLML or NVML, or None (why goes into `errors`, unless not installed)."""
    try:
        source = kind(sys_root)
    except SourceUnavailable as why:
        if why.installed:
            errors.append(str(why))
        return None
    try:
        return source.read()
    except Exception as error:
        errors.append(failed(f"{type(error).__name__}: {error}").banner())
        return None
    finally:
        source.close()


def _read_hl_smi(executable: str, timeout: float) -> tuple[Reading | None, list[str]]:
    deadline = time.monotonic() + timeout
    csv, fault = hlsmi_once.read_csv_once(executable, timeout)
    errors = [] if fault is None else [fault.banner()]
    if fault is not None and fault.code in ("hl-smi-missing", "hl-smi-hang"):
        return None, errors
    metadata = hlsmi_once.read_metadata(executable, max(1.0, deadline - time.monotonic()))
    readings = [r for r in (csv, metadata) if r is not None]
    combined = merge(readings) if readings else None
    if combined is None or not combined.devices:
        return None, errors or ["hl-smi answered but listed no card"]
    return combined, errors


def read_once(
    timeout: float = 10.0,
    hl_smi: str = HL_SMI,
    sys_root: str = "/sys",
    dev_root: str = "/dev",
    proc_root: str = "/proc",
) -> DeviceSnapshot:
    """One snapshot from HLML, else hl-smi (one-shot), else NVML, else host only (`source="none"`)."""
    errors: list[str] = []
    try:
        source: Source = "hlml"
        reading = _read_library(HlmlSource, sys_root, faults.hlml_failed, errors)
        if reading is not None and shutil.which(hl_smi):
            table = hlsmi_once.run_once(hl_smi, [], min(timeout, 5.0))
            if table.fault is None:
                reading = merge([reading, parse_table(table.stdout)])
        if reading is None and shutil.which(hl_smi):
            reading, problems = _read_hl_smi(hl_smi, timeout)
            errors.extend(problems)
            source = "hl-smi" if reading is not None else "none"
        if reading is None:
            reading, source = _read_library(NvmlSource, sys_root, faults.nvml_failed, errors), "nvml"
        if reading is None:
            base = faults.hl_smi_missing(hl_smi) if not shutil.which(hl_smi) else faults.hl_smi_exited(-1, "")
            fault = faults.most_specific(base, sys_root, dev_root)
            if fault.code != "hl-smi-exit":
                errors.insert(0, fault.banner())
            return DeviceSnapshot(source="none", errors=tuple(errors))
        if source not in ("hlml", "hl-smi"):
            return reading.to_snapshot(source, errors)
        reading = with_kernel_facts(reading, sys_root)
        processes = merge_processes(reading.processes, find_holders(proc_root), proc_root)
        snapshot = replace(reading.to_snapshot(source, errors), processes=processes)
        if not shutil.which(hl_smi):
            return replace(snapshot, link_errors=(f"{hl_smi} is not installed: the NIC links are unknown",))
        links, link_errors = read_links_hlsmi(hl_smi, snapshot.devices, min(timeout, ONE_SHOT_S))
        return replace(snapshot, links=links, link_errors=link_errors)
    except Exception as error:  # never raise to the caller
        return DeviceSnapshot(
            source="none", errors=(*errors, f"device query failed: {type(error).__name__}: {error}")
        )
