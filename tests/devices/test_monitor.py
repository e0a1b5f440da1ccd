"""The device monitor: picks the source, keeps the host row alive, reports faults, falls back."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gaudi_tui.core.devices import faults
from gaudi_tui.core.devices.early_query import EarlyQuery
from gaudi_tui.core.devices.monitor import DeviceMonitor, MonitorConfig, MonitorUpdate, quick_fault
from gaudi_tui.core.devices.sources.host import HostStats
from tests.conftest import PYTHON
from tests.devices.conftest import FakeHlSmi

HOST = HostStats(cpu_pct=12.0, cpu_count=2, memory_used_mib=1024, memory_total_mib=8192, load=(0.5, 0.4, 0.3))


class Run:
    def __init__(self, config: MonitorConfig, early: EarlyQuery | None = None) -> None:
        self.updates: list[MonitorUpdate] = []
        self.cancel = threading.Event()
        self.monitor = DeviceMonitor(
            config, self.updates.append, self.cancel, host_reader=lambda: HOST, early=early
        )
        self.thread = threading.Thread(target=self.monitor.run)
        self.thread.start()

    def wait_for(
        self, condition: Callable[[MonitorUpdate], bool], timeout: float = 15.0, after: int = -1
    ) -> MonitorUpdate:
        """The first update after position `after` that meets `condition`."""
        deadline = time.monotonic() + timeout
        while True:
            for position, update in enumerate(list(self.updates)):
                if position > after and condition(update):
                    self.position = position
                    return update
            assert time.monotonic() < deadline, f"no such update; last: {self.updates[-1:]}"
            time.sleep(0.02)

    def stop(self) -> None:
        self.cancel.set()
        self.thread.join(5)
        assert not self.thread.is_alive()


def test_hl_smi_refreshes_carry_host_holders_and_versions(fake_hl_smi: FakeHlSmi, tmp_path: Path) -> None:
    fake_hl_smi.set(period="0.1")
    node = tmp_path / "accel" / "accel7"
    node.parent.mkdir()
    node.touch()
    holder = subprocess.Popen([PYTHON, "-c", f"f = open({str(node)!r}); import time; time.sleep(60)"])
    pattern = rf"^{re.escape(str(tmp_path))}/accel/accel(\d+)$"
    time.sleep(0.5)
    run = Run(MonitorConfig(node_pattern=pattern, holders_every=0.2))
    try:
        # The first picture is one `-Q` query's; the versions come with the table read after it.
        update = run.wait_for(
            lambda u: len(u.snapshot.devices) == 8 and bool(u.holders) and bool(u.snapshot.hl_smi_version)
        )
        many = run.wait_for(lambda u: True, after=10)
    finally:
        run.stop()
        holder.kill()
        holder.wait()
    assert update.snapshot.source == "hl-smi"
    assert update.snapshot.hl_smi_version == "hl-1.20.0-fw-58.1.1.1"
    assert update.snapshot.driver_version == "1.19.1-6f47ddd"
    assert update.host == HOST
    assert [(h.index, h.pid) for h in update.holders] == [(7, holder.pid)]
    assert [(p.index, p.pid) for p in update.snapshot.processes] == [(7, holder.pid)]
    assert many.faults == ()
    assert len(fake_hl_smi.loop_pids()) == 1  # ten refreshes, one child
    assert not Path(f"/proc/{fake_hl_smi.loop_pids()[0]}").exists()


def test_without_any_source_the_host_row_lives_on_with_a_banner(no_hl_smi: None) -> None:
    run = Run(MonitorConfig(interval=0.05, backoff_start=0.2))
    try:
        run.wait_for(lambda u: len(run.updates) >= 3)
    finally:
        run.stop()
    update = run.updates[-1]
    assert (update.snapshot.source, update.snapshot.devices, update.host) == ("none", (), HOST)
    assert [f.code for f in update.faults] == ["hl-smi-missing"]
    assert update.snapshot.errors == (update.faults[0].banner(),)
    assert update.retry_in is not None


@pytest.fixture
def driver_loaded(tmp_path: Path) -> str:
    """A sys root where /sys/module/habanalabs exists, so hl-smi's own error is the banner."""
    (tmp_path / "sys" / "module" / "habanalabs").mkdir(parents=True)
    return str(tmp_path / "sys")


def test_a_dying_hl_smi_shows_a_banner_then_recovers(fake_hl_smi: FakeHlSmi, driver_loaded: str) -> None:
    fake_hl_smi.set(fault="die", after="2", period="0.1")
    run = Run(MonitorConfig(backoff_start=0.1, sys_root=driver_loaded))
    try:
        failed = run.wait_for(lambda u: bool(u.faults))
        recovered = run.wait_for(lambda u: not u.faults, after=run.position)
    finally:
        run.stop()
    assert failed.faults[0].code == "hl-smi-exit"
    assert failed.snapshot.errors[0].startswith("hl-smi exited with code 1")
    assert len(recovered.snapshot.devices) == 8


def test_lost_hlml_falls_back_to_hl_smi(
    fake_modules: None, fake_hl_smi: FakeHlSmi, monkeypatch: pytest.MonkeyPatch, driver_loaded: str
) -> None:
    monkeypatch.setenv("FAKE_PYHLML_FAULT", "lost")
    fake_hl_smi.set(period="0.1")
    run = Run(MonitorConfig(interval=0.05, sys_root=driver_loaded))
    try:
        first = run.wait_for(lambda u: u.snapshot.source == "hlml")
        fallback = run.wait_for(lambda u: u.snapshot.source == "hl-smi")
        lost = run.wait_for(lambda u: any(f.code == "hlml-error" for f in u.faults))
    finally:
        run.stop()
    assert len(first.snapshot.devices) == len(fallback.snapshot.devices) == 8
    assert "AipIsLost" in lost.faults[0].what


def test_a_failing_hl_smi_without_the_driver_blames_the_driver(
    fake_hl_smi: FakeHlSmi, tmp_path: Path
) -> None:
    fake_hl_smi.set(fault="exit")
    run = Run(MonitorConfig(backoff_start=0.1, sys_root=str(tmp_path)))
    try:
        update = run.wait_for(lambda u: bool(u.faults))
    finally:
        run.stop()
    assert update.faults[0].code == "driver-not-loaded"
    assert "modprobe habanalabs" in update.faults[0].todo
    assert "exited with code 3" in update.faults[0].what  # hl-smi's own words are kept


def test_permission_denied_on_the_nodes_is_the_banner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "accel").mkdir()
    (tmp_path / "accel" / "accel0").touch()
    monkeypatch.setattr(os, "access", lambda *_args, **_kw: False)  # tests run as root, who may open anything
    fault = faults.most_specific(faults.hl_smi_exited(1, ""), sys_root=str(tmp_path), dev_root=str(tmp_path))
    assert fault.code == "permission-denied"
    assert "accel0" in fault.what and "group" in fault.todo


def test_quick_fault_needs_no_child(no_hl_smi: None, fake_hl_smi: FakeHlSmi) -> None:
    fault = quick_fault(MonitorConfig(hl_smi="no-such-hl-smi"))
    assert fault is not None and fault.code == "hl-smi-missing"
    assert quick_fault(MonitorConfig()) is None  # the fake is on PATH
    assert fake_hl_smi.starts() == []
