"""The live device feed behind the Devices screen and `gaudi-tui devices --watch`.

`DeviceMonitor.run()` (in a worker thread) picks the best source — HLML, else ONE long-lived
hl-smi child, else NVML, else host only — and calls `on_update` once per refresh with the snapshot,
the host row, the card holders (rescanned every `holders_every` seconds by a `HolderScanner`, which
reads every process's fds only every `holders_full_every` seconds) and the current faults.
When a source fails it falls back and tries the better ones again after a backoff. It returns
when `cancel` is set, with its hl-smi child ended.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from gaudi_tui.core.devices import faults
from gaudi_tui.core.devices.early_query import EarlyQuery
from gaudi_tui.core.devices.faults import Fault
from gaudi_tui.core.devices.feed import MonitorConfig, MonitorUpdate, quick_fault
from gaudi_tui.core.devices.holders import CardHolder, HolderScanner
from gaudi_tui.core.devices.model import DeviceSnapshot, Source
from gaudi_tui.core.devices.query import with_kernel_facts
from gaudi_tui.core.devices.reading import Reading, merge
from gaudi_tui.core.devices.sources import hlsmi, hlsmi_once
from gaudi_tui.core.devices.sources.hlml import HlmlSource
from gaudi_tui.core.devices.sources.host import FIRST_HOST_S, HostReader, HostStats
from gaudi_tui.core.devices.sources.library import SourceUnavailable
from gaudi_tui.core.devices.sources.nvml import NvmlSource
from gaudi_tui.core.devices.usage import holder_processes


class DeviceMonitor:
    def __init__(
        self,
        config: MonitorConfig,
        on_update: Callable[[MonitorUpdate], object],
        cancel: threading.Event,
        host_reader: Callable[[], HostStats | None] | None = None,
        early: EarlyQuery | None = None,
    ) -> None:
        """`early`: the panel's first `-Q` query, started at its launch (read as the first picture)."""
        self.config = config
        self.early = early
        self.on_update = on_update
        self.cancel = cancel
        self.read_host = host_reader or HostReader(min_gap=config.interval, first_after=FIRST_HOST_S).read
        self.snapshot = DeviceSnapshot(source="none")
        self.faults: tuple[Fault, ...] = ()
        self.retry_in: float | None = None
        self.holders: tuple[CardHolder, ...] = ()
        self._holders_at = float("-inf")
        self._scanner = HolderScanner(config.proc_root, config.node_pattern, config.holders_full_every)
        self.backoff = hlsmi.Backoff(config.backoff_start, config.backoff_max)
        self.poller: hlsmi.HlSmiPoller | None = None
        self._hlml_after = 0.0
        self._numa_of_bus: dict[str | None, int | None] = {}
        """sysfs's NUMA node per bus ID, read once per feed (`r` starts a new feed)."""

    def request_holder_scan(self) -> None:
        """Rescan /proc at the next refresh (after stopping a holder, say)."""
        self._holders_at = float("-inf")

    # -- publishing ---------------------------------------------------------------------------
    def _scan_holders(self) -> None:
        now = time.monotonic()
        if now - self._holders_at >= self.config.holders_every:
            self._holders_at = now
            self.holders = tuple(self._scanner.scan())

    def publish(self) -> None:
        self._scan_holders()
        snapshot = self.snapshot
        if snapshot.source in ("hl-smi", "hlml"):
            snapshot = replace(snapshot, processes=holder_processes(self.holders))
        errors = tuple(f.banner() for f in self.faults)
        if errors != snapshot.errors:
            snapshot = replace(snapshot, errors=errors)
        self.snapshot = snapshot
        self.on_update(MonitorUpdate(snapshot, self.read_host(), self.holders, self.faults, self.retry_in))

    def _set(self, reading: Reading, source: Source) -> None:
        reading = with_kernel_facts(reading, self.config.sys_root, self._numa_of_bus)
        self.snapshot = reading.to_snapshot(source)
        self.faults, self.retry_in = (), None

    def _fault(self, fault: Fault, retry_in: float | None) -> None:
        """The source failed: its cards are no longer known (the snapshot drops them, so Devices,
        `devices --watch` and the exporter never show a last reading as if it were current)."""
        fault = faults.most_specific(fault, self.config.sys_root, self.config.dev_root)
        self.faults, self.retry_in = (fault,), retry_in
        self.snapshot = replace(self.snapshot, devices=(), processes=())

    def _tick_wait(self) -> bool:
        """Wait one interval; True if cancelled."""
        return self.cancel.wait(self.config.interval)

    # -- sources ------------------------------------------------------------------------------
    def _run_in_process(
        self, source: HlmlSource | NvmlSource, name: Source, failed: Callable[[str], Fault]
    ) -> None:
        try:
            while not self.cancel.is_set():
                self._set(source.read(), name)
                self.backoff.reset()
                self.publish()
                if self._tick_wait():
                    return
        except Exception as error:  # a lost card or driver: fall back, retry later
            self._fault(failed(f"{type(error).__name__}: {error}"), None)
            self.publish()
        finally:
            source.close()

    def _first_picture(self) -> tuple[Reading | None, bool]:
        """One `-Q` query (the panel's early one, if it started it), shown at once: it ends at its
        last row (the loop's first refresh waits for a quiet pipe), and does not wait for the table
        and `topo` (versions, NUMA). Its fault is shown at once too. (The reading, or None; False
        when hl-smi hung: the table and `topo` would hang as well, so the loop goes on without them.)"""
        early, self.early = self.early, None
        answer = early.ready_answer() if early is not None else None
        if answer is not None:  # the screen drew it already: the same cards, with what the feed adds
            first, fault = hlsmi_once.read_csv_text(answer)
        else:
            started = early.take(self.config.hl_smi) if early is not None else None
            timeout = self.config.metadata_timeout
            first, fault = hlsmi_once.read_csv_once(self.config.hl_smi, timeout, self.cancel, started)
        if self.cancel.is_set():
            return None, False
        if first is not None:
            self._set(first, "hl-smi")
        elif fault is not None:
            self._fault(fault, None)
        self.publish()
        return first, fault is None or fault.code not in ("hl-smi-hang", "hl-smi-abandoned")

    def _run_hl_smi(self) -> Fault | None:
        first, answered = self._first_picture()
        metadata = merge([])
        if answered:
            metadata = hlsmi_once.read_metadata(self.config.hl_smi, self.config.metadata_timeout, self.cancel)
            metadata = replace(metadata, processes=(), errors=())
        if first is None and metadata.devices and not self.cancel.is_set():  # a full snapshot too
            self._set(metadata, "hl-smi")
            self.publish()  # (else its versions come with the loop's first refresh)

        def on_reading(tick: Reading) -> None:
            self._set(merge([tick, metadata]), "hl-smi")
            self.publish()

        def on_fault(fault: Fault, pause: float | None) -> None:
            self._fault(fault, pause)
            self.publish()

        self.poller = hlsmi.HlSmiPoller(
            self.config.hl_smi,
            int(self.config.interval),
            on_reading,
            on_fault,
            self.cancel,
            stall_timeout=self.config.stall_timeout,
            backoff=hlsmi.Backoff(self.config.backoff_start, self.config.backoff_max),
            on_wait=self.publish,
        )
        return self.poller.run()

    def _host_only(self, fault: Fault) -> None:
        """No Gaudi source: host row (and any stale card data) with a banner, until the retry."""
        pause = self.backoff.take()
        self._fault(fault, pause)
        self.snapshot = replace(self.snapshot, source="none", devices=(), processes=())
        deadline = time.monotonic() + pause
        while not self.cancel.is_set():
            self.retry_in = max(0.0, deadline - time.monotonic())
            self.publish()
            if time.monotonic() >= deadline or self._tick_wait():
                return

    def run(self) -> None:
        while not self.cancel.is_set():
            fault: Fault | None = None
            if self.config.use_hlml and time.monotonic() >= self._hlml_after:
                try:
                    self._run_in_process(HlmlSource(self.config.sys_root), "hlml", faults.hlml_failed)
                    self._hlml_after = time.monotonic() + self.backoff.take()  # it failed: not at once again
                    continue
                except SourceUnavailable:
                    pass
            if shutil.which(self.config.hl_smi):
                fault = self._run_hl_smi()
                if fault is None:
                    return  # cancelled
            else:
                fault = faults.hl_smi_missing(self.config.hl_smi)
            if self.config.use_nvml and not self.cancel.is_set():
                try:
                    self._run_in_process(NvmlSource(self.config.sys_root), "nvml", faults.nvml_failed)
                    continue
                except SourceUnavailable:
                    pass
            self._host_only(fault)


__all__ = ["DeviceMonitor", "MonitorConfig", "MonitorUpdate", "quick_fault"]
