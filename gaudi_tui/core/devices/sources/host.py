"""The host row: CPU %, memory and load average from psutil (always available)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

FIRST_HOST_S = 3.0
"""The host row's first CPU % is averaged over this long (then every refresh)."""
HIDDEN_WAKE_S = 0.5
"""While the host row is hidden, how soon its thread sees a cancel."""


@dataclass(frozen=True)
class HostStats:
    cpu_pct: float
    cpu_count: int
    memory_used_mib: int
    memory_total_mib: int
    load: tuple[float, float, float] | None

    def describe(self) -> str:
        load = " ".join(f"{x:.2f}" for x in self.load) if self.load else "n/a"
        return (
            f"host: CPU {self.cpu_pct:.0f}% of {self.cpu_count} cores · "
            f"RAM {self.memory_used_mib / 1024:.1f}/{self.memory_total_mib / 1024:.1f} GiB · load {load}"
        )


class HostReader:
    """CPU % is measured between two reads. The first figures come `first_after` seconds after
    the priming read (a CPU % over a few ms means nothing; a few seconds gives a steady first
    figure); later reads closer than `min_gap` seconds return the previous figures."""

    def __init__(self, min_gap: float = 0.5, first_after: float | None = None) -> None:
        psutil.cpu_percent(interval=None)
        self.min_gap = min_gap
        self._wait = min_gap if first_after is None else first_after
        self._last: HostStats | None = None
        self._at = time.monotonic()

    def read(self) -> HostStats | None:
        """The host figures, or None until the first window has passed."""
        now = time.monotonic()
        if now - self._at < self._wait:
            return self._last
        self._at, self._wait = now, self.min_gap
        self._last = self._measure()
        return self._last

    def _measure(self) -> HostStats:
        memory = psutil.virtual_memory()
        try:
            load: tuple[float, float, float] | None = os.getloadavg()
        except OSError:
            load = None
        return HostStats(
            cpu_pct=psutil.cpu_percent(interval=None),
            cpu_count=psutil.cpu_count() or 1,
            memory_used_mib=int((memory.total - memory.available) / 2**20),
            memory_total_mib=int(memory.total / 2**20),
            load=load,
        )


def tick_host(
    on_host: Callable[[HostStats], None],
    cancel: threading.Event,
    interval: float,
    reader: Callable[[], HostStats | None] | None = None,
    shown: threading.Event | None = None,
) -> None:
    """Call `on_host` with fresh host figures every `interval` seconds until `cancel` is set; while
    `shown` is clear (its screen is hidden), read nothing, and read at once when it is set again.

    Runs in its own thread, apart from the device feed, so the host row stays live whatever the
    device source does (a hanging hl-smi, slow metadata reads, a stall wait).
    """
    read = reader or HostReader(min_gap=interval / 2, first_after=FIRST_HOST_S).read
    while not cancel.is_set():
        if shown is not None and not shown.is_set():
            shown.wait(HIDDEN_WAKE_S)
            continue
        stats = read()
        if stats is not None:
            on_host(stats)
        if cancel.wait(interval):
            return
