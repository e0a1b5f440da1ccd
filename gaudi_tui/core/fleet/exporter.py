"""`gaudi-tui exporter`: this host's cards as Prometheus metrics under Intel's exporter names.

The values come from the Devices sources (`core.devices.monitor`: HLML, else one long-lived hl-smi)
or from a saved hl-smi output (`--input`, read like `gaudi-tui devices --input`). Each scrape
serves the latest snapshot; it never runs hl-smi itself, so scrapes are cheap and never pile up.

What is served, per card (labels `metrics.LABELS`):
  habanalabs_utilization            ← utilization.aip (%)
  habanalabs_memory_used_bytes      ← memory.used MiB × 1,048,576
  habanalabs_memory_total_bytes     ← memory.total MiB × 1,048,576
  habanalabs_memory_free_bytes      ← (memory.total − memory.used) MiB × 1,048,576 (hl-smi's memory.free)
  habanalabs_power_mW               ← power.draw W × 1000
  habanalabs_power_default_limit_mW ← power.max (the table's cap) W × 1000
  habanalabs_temperature_onchip     ← temperature.aip (°C)
  habanalabs_device_config          = 1
  habanalabs_nic_port_status{port,port_type}  ← `hl-smi -n link` (1 UP, 0 DOWN) and `-n ports`
                                    (external/internal; `unknown` when `-n ports` did not answer),
                                    or HLML's port masks, read every 30 s by `core.devices.details`
A value the source does not give leaves that card's series out. Neither hl-smi's query/table forms
nor the HLML calls the Devices code makes give the on-board temperature, the thresholds, the ECC
mode, pending rows or PCIe figures, so those series are absent (never made up: hl-smi's
uncorrected-ECC count is a different counter from Intel's pending rows). `Serial` and `device`
are `na` (neither source read here gives the serial), as Intel's exporter writes `UUID` when unknown.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from gaudi_tui.core.devices.model import CardLinks, Device, DeviceSnapshot
from gaudi_tui.core.fleet import metrics as m

UNKNOWN = "na"

ValueOf = Callable[[Device], float | None]


def _scaled(value: float | int | None, factor: float) -> float | None:
    return None if value is None else float(value) * factor


def _free_mib(device: Device) -> float | None:
    if device.memory_total_mib is None or device.memory_used_mib is None:
        return None
    return float(device.memory_total_mib - device.memory_used_mib)


SERIES: tuple[tuple[m.MetricInfo, ValueOf], ...] = (
    (m.UTILIZATION, lambda d: d.utilization_pct),
    (m.MEMORY_USED, lambda d: _scaled(d.memory_used_mib, m.MIB)),
    (m.MEMORY_FREE, lambda d: _scaled(_free_mib(d), m.MIB)),
    (m.MEMORY_TOTAL, lambda d: _scaled(d.memory_total_mib, m.MIB)),
    (m.POWER, lambda d: _scaled(d.power_draw_w, 1000)),
    (m.POWER_LIMIT, lambda d: _scaled(d.power_cap_w, 1000)),
    (m.TEMP_ONCHIP, lambda d: d.temperature_c),
    (m.DEVICE_CONFIG, lambda d: 1.0),
)


@dataclass(frozen=True)
class KernelFacts:
    """Labels Intel's exporter reads from sysfs; empty where this host has no such file."""

    sys_root: str = "/sys"

    def _read(self, path: str) -> str:
        try:
            return (Path(self.sys_root) / path).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return ""

    def driver(self) -> str:
        return self._read("module/habanalabs/version")

    def card(self, index: int) -> tuple[str, str]:
        """(fit, spi) of card `index`: its `uboot_ver` and `armcp_kernel_ver`."""
        base = f"class/accel/accel{index}/device"
        return self._read(f"{base}/uboot_ver"), self._read(f"{base}/armcp_kernel_ver")


def labels_for(device: Device, snapshot: DeviceSnapshot, facts: KernelFacts) -> list[str]:
    fit, spi = facts.card(device.index)
    driver = snapshot.driver_version or facts.driver()
    serial = UNKNOWN
    return [serial, device.uuid or UNKNOWN, serial, str(device.index), fit, spi, driver, "", ""]


def families(snapshot: DeviceSnapshot, facts: KernelFacts) -> Iterator[GaugeMetricFamily]:
    """One gauge family per metric the snapshot has values for (a family with no card is left out)."""
    labelled = [(d, labels_for(d, snapshot, facts)) for d in snapshot.devices]
    for info, value_of in SERIES:
        family = GaugeMetricFamily(info.name, info.help, labels=m.LABELS)
        for device, labels in labelled:
            value = value_of(device)
            if value is not None:
                family.add_metric(labels, value)
        if family.samples:
            yield family


def nic_family(snapshot: DeviceSnapshot, facts: KernelFacts) -> GaugeMetricFamily | None:
    """`habanalabs_nic_port_status` for every port of every card the snapshot has links for."""
    by_index = {d.index: d for d in snapshot.devices}
    family = GaugeMetricFamily(
        m.NIC_PORT_STATUS.name, m.NIC_PORT_STATUS.help, labels=(*m.LABELS, *m.NIC_LABELS)
    )
    for card in snapshot.links:
        device = by_index.get(card.index) if card.index is not None else None
        if device is None:
            continue
        labels = labels_for(device, snapshot, facts)
        for port in card.ports:
            family.add_metric([*labels, str(port.number), port.type or "unknown"], 1.0 if port.up else 0.0)
    return family if family.samples else None


class SnapshotCollector(Collector):
    """Serves whatever `latest()` returns at scrape time."""

    def __init__(self, latest: Callable[[], DeviceSnapshot], facts: KernelFacts | None = None) -> None:
        self.latest = latest
        self.facts = facts or KernelFacts()

    def collect(self) -> Iterable[GaugeMetricFamily]:
        snapshot = self.latest()
        found = list(families(snapshot, self.facts))
        nic = nic_family(snapshot, self.facts)
        return [*found, nic] if nic is not None else found


class LatestSnapshot:
    """The newest snapshot a device feed published, with the newest links the details reader found
    (thread-safe hand-over to the HTTP thread)."""

    def __init__(self, first: DeviceSnapshot | None = None) -> None:
        self._lock = threading.Lock()
        self._snapshot = first or DeviceSnapshot(source="none")
        self._links: tuple[CardLinks, ...] = ()

    def set(self, snapshot: DeviceSnapshot) -> None:
        with self._lock:
            self._snapshot = snapshot

    def set_links(self, links: tuple[CardLinks, ...]) -> None:
        with self._lock:
            self._links = links

    def get(self) -> DeviceSnapshot:
        """The snapshot; its own links (a saved output's) or the reader's, only for cards it has."""
        with self._lock:
            snapshot, links = self._snapshot, self._links
        if snapshot.links or not links or not snapshot.devices:
            return snapshot
        return replace(snapshot, links=links)


def registry_for(latest: Callable[[], DeviceSnapshot], facts: KernelFacts | None = None) -> CollectorRegistry:
    """A registry with only the card metrics (no process/GC collectors)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(latest, facts))
    return registry
