"""What the Devices screen and `devices --watch` need before any source runs: the monitor's
settings, the update it publishes, and the fault known without running anything.

Kept apart from `monitor.py` so the panel's first frame imports no source, parser or psutil:
those load in the feed thread once a source is chosen.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gaudi_tui.core.devices.holders import DEFAULT_NODE_PATTERN

if TYPE_CHECKING:  # not before the panel's first frame (the model's dataclasses cost ~6 ms)
    from gaudi_tui.core.devices.faults import Fault
    from gaudi_tui.core.devices.holders import CardHolder
    from gaudi_tui.core.devices.model import DeviceSnapshot
    from gaudi_tui.core.devices.sources.host import HostStats


@dataclass(frozen=True)
class MonitorConfig:
    interval: float = 1.0
    hl_smi: str = "hl-smi"
    use_hlml: bool = True
    use_nvml: bool = True
    proc_root: str = "/proc"
    node_pattern: str = DEFAULT_NODE_PATTERN
    sys_root: str = "/sys"
    dev_root: str = "/dev"
    holders_every: float = 5.0
    holders_full_every: float = 30.0
    """A new holder shows within `holders_every` s; one that opened a card while closing another fd
    (its fd count unchanged) within this (`holders.HolderScanner`)."""
    stall_timeout: float | None = None
    backoff_start: float = 1.0
    backoff_max: float = 30.0
    metadata_timeout: float = 10.0


@dataclass(frozen=True)
class MonitorUpdate:
    snapshot: DeviceSnapshot
    host: HostStats | None
    holders: tuple[CardHolder, ...]
    faults: tuple[Fault, ...] = ()
    retry_in: float | None = None
    """Seconds until the failed source is tried again, when there is a fault."""


def quick_fault(config: MonitorConfig) -> Fault | None:
    """Without running anything: the fault the monitor will report when no source can exist here
    (no hl-smi on PATH, no pyhlml, no pynvml). Lets the screen show its banner on the first frame."""
    from importlib.util import find_spec

    from gaudi_tui.core.devices import faults

    if shutil.which(config.hl_smi) or (config.use_hlml and find_spec("pyhlml")):
        return None
    if config.use_nvml and find_spec("pynvml"):
        return None
    return faults.most_specific(faults.hl_smi_missing(config.hl_smi), config.sys_root, config.dev_root)
