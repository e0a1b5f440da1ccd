"""Intel Gaudi metric exporter's names, HELP texts and labels (what `gaudi-tui exporter` serves and
the Fleet screen reads).

Source: HabanaAI/gaudi-metric-exporter at commit 2d50e442aff7021eacd4bac8d4c23bf69e674fb3
("Release 1.24.0-1007"; identical .go files at 1.23.0) and Intel's "Prometheus Metric Exporter"
page (docs.habana.ai, Orchestration/Prometheus_Metric_Exporter.html). Facts only, no code (the
exporter is GPL-2.0).

- Every per-device series is TYPE gauge and carries the labels in `LABELS`: `Serial` (card serial),
  `UUID` (`na` when unavailable), `device` (the serial again, not `hl0`), `id` (HLML enumeration
  index 0..N-1, not the module ID), `fit` (sysfs `uboot_ver`), `spi` (sysfs `armcp_kernel_ver`),
  `driver` (`/sys/module/habanalabs/version`), `pod_namespace`/`pod_name` (the Kubernetes pod
  holding the card, empty when none). There is no bus-id, module-id or product label.
- Intel's exporter listens on 41611; Prometheus tells hosts apart by `instance`, cards by `id`.
- `habanalabs_device_config` is always 1, one series per card (`sum(...)` counts cards).
"""

from __future__ import annotations

from dataclasses import dataclass

LABELS = ("Serial", "UUID", "device", "id", "fit", "spi", "driver", "pod_namespace", "pod_name")
INTEL_PORT = 41611
EXPORTER_PORT = 41612
"""`gaudi-tui exporter`'s default: one more than Intel's, so both can run on one host."""
MIB = 1_048_576


@dataclass(frozen=True)
class MetricInfo:
    name: str
    help: str


UTILIZATION = MetricInfo("habanalabs_utilization", "Utilization of the device")
MEMORY_USED = MetricInfo("habanalabs_memory_used_bytes", "Current used bytes of memory")
MEMORY_FREE = MetricInfo("habanalabs_memory_free_bytes", "Current free bytes of memory")
MEMORY_TOTAL = MetricInfo("habanalabs_memory_total_bytes", "Current total bytes of memory")
POWER = MetricInfo("habanalabs_power_mW", "Power usage in milli-watts")
POWER_LIMIT = MetricInfo("habanalabs_power_default_limit_mW", "Default Power usage limit in milli-watts")
TEMP_ONCHIP = MetricInfo("habanalabs_temperature_onchip", "Chip temperature in celsius")
TEMP_ONBOARD = MetricInfo("habanalabs_temperature_onboard", "Board temperature in celsius")
TEMP_SLOWDOWN = MetricInfo("habanalabs_temperature_threshold_slowdown", "Temperature threshold for slowdown")
TEMP_SHUTDOWN = MetricInfo("habanalabs_temperature_threshold_shutdown", "Temperature threshold for shutdown")
ECC_MODE = MetricInfo("habanalabs_ecc_feature_mode", "ECC feature mode")
PENDING_ROWS = MetricInfo(
    "habanalabs_pending_rows_state", "Whether or not there are rows waiting for replacement"
)
ECC_SINGLE_ROWS = MetricInfo(
    "habanalabs_pending_rows_with_single_bit_ecc_errors", "Counter for rows with Single-Bit ECC errors"
)
ECC_DOUBLE_ROWS = MetricInfo(
    "habanalabs_pending_rows_with_double_bit_ecc_errors", "Counter for rows with Double-Bit ECC errors"
)
"""HBM rows with ECC errors waiting for replacement (a reset replaces them): gauges, though the HELP
says counter (the alerting rules watch them with `delta`)."""
PCIE_REPLAY = MetricInfo("habanalabs_pcie_replay_count", "PCIe replay count")
PCI_LINK_SPEED = MetricInfo("habanalabs_pci_link_speed", "Current PCI Link Speed")
PCI_LINK_WIDTH = MetricInfo("habanalabs_pci_link_width", "Current PCI link width")
DEVICE_CONFIG = MetricInfo("habanalabs_device_config", "")
"""Always 1, one series per card (Intel's exporter gives it no HELP text)."""
NIC_PORT_STATUS = MetricInfo("habanalabs_nic_port_status", "")
"""One series per NIC port of a card: 1 = link up, 0 = down or error (Intel's exporter reads HLML's
port masks and each port's link, and gives it no HELP text). Extra labels `NIC_LABELS`: `port` (the
port number) and `port_type` (`external` = scale-out, `internal` = scale-up)."""
NIC_LABELS = ("port", "port_type")

FLEET_METRICS = (
    UTILIZATION,
    MEMORY_USED,
    MEMORY_TOTAL,
    POWER,
    POWER_LIMIT,
    TEMP_ONCHIP,
    TEMP_SLOWDOWN,
    PENDING_ROWS,
)
"""What the Fleet screen asks Prometheus for each refresh: one query per metric for the whole fleet."""

NOT_SERVED = (
    TEMP_ONBOARD,
    TEMP_SLOWDOWN,
    TEMP_SHUTDOWN,
    ECC_MODE,
    PENDING_ROWS,
    ECC_SINGLE_ROWS,
    ECC_DOUBLE_ROWS,
    PCIE_REPLAY,
    PCI_LINK_SPEED,
    PCI_LINK_WIDTH,
)
"""Intel's series that `gaudi-tui exporter` leaves out: hl-smi's table/-Q and the HLML calls the Devices
code makes do not give them, and none is made up from another figure."""
