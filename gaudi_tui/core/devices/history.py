"""A bounded per-card history (utilization, HBM, power) for the sparklines: the last 5 minutes."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gaudi_tui.core.devices.model import DeviceSnapshot

METRICS = ("utilization", "memory", "power")


class History:
    def __init__(self, seconds: float = 300.0, interval: float = 1.0) -> None:
        self.size = max(2, int(seconds / max(interval, 0.001)) + 1)
        self._series: dict[tuple[int, str], deque[float | None]] = {}

    def add(self, snapshot: DeviceSnapshot) -> None:
        for device in snapshot.devices:
            for metric, value in zip(
                METRICS, (device.utilization_pct, device.memory_used_mib, device.power_draw_w), strict=True
            ):
                key = (device.index, metric)
                series = self._series.get(key)
                if series is None:
                    series = self._series[key] = deque(maxlen=self.size)
                series.append(None if value is None else float(value))

    def series(self, index: int, metric: str) -> Sequence[float | None]:
        return self._series.get((index, metric), ())
