"""read_once(): HLML → hl-smi → NVML → host only; never raises; versions and module IDs filled."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaudi_tui.core.devices import query
from gaudi_tui.core.devices.query import read_once
from gaudi_tui.core.devices.sources import sysfs
from gaudi_tui.core.devices.sources.hlml import HlmlSource
from tests.devices.conftest import FakeHlSmi


def test_hl_smi_one_shot_fills_values_versions_modules_and_numa(fake_hl_smi: FakeHlSmi) -> None:
    snapshot = read_once(timeout=10)
    assert snapshot.source == "hl-smi"
    assert (snapshot.hl_smi_version, snapshot.driver_version) == ("hl-1.20.0-fw-58.1.1.1", "1.19.1-6f47ddd")
    assert len(snapshot.devices) == 8
    three = snapshot.devices[3]
    assert (three.memory_used_mib, three.module_id, three.power_cap_w, three.bus_id) == (
        96565,
        7,
        600,
        "0000:b4:00.0",
    )
    assert three.numa_node == 1  # module 7 → NUMA 1 from `hl-smi topo -c -N`
    assert [(p.index, p.pid) for p in snapshot.processes] == [(7, 107684)]  # from the table
    assert snapshot.errors == ()
    assert snapshot.to_json()["devices"][3]["module_id"] == 7


def test_no_source_gives_host_only_with_the_reason(no_hl_smi: None) -> None:
    snapshot = read_once(timeout=2)
    assert (snapshot.source, snapshot.devices) == ("none", ())
    assert "`hl-smi` is not on PATH" in snapshot.errors[0]


def test_failing_hl_smi_is_an_error_not_an_exception(fake_hl_smi: FakeHlSmi, tmp_path: Path) -> None:
    fake_hl_smi.set(fault="exit", code="3")
    (tmp_path / "module" / "habanalabs").mkdir(parents=True)  # driver loaded: no more specific cause
    snapshot = read_once(timeout=5, sys_root=str(tmp_path))
    assert snapshot.source == "none"
    assert any("exited with code 3" in e for e in snapshot.errors)


def test_hl_smi_with_the_driver_unloaded_says_so(fake_hl_smi: FakeHlSmi, tmp_path: Path) -> None:
    fake_hl_smi.set(fault="exit")
    snapshot = read_once(timeout=5, sys_root=str(tmp_path))
    assert "habanalabs kernel driver is not loaded" in snapshot.errors[0]


def test_hanging_hl_smi_times_out(fake_hl_smi: FakeHlSmi) -> None:
    fake_hl_smi.set(fault="hang")
    snapshot = read_once(timeout=0.5)
    assert snapshot.source == "none"
    assert any("printed nothing" in e for e in snapshot.errors)
    assert not any(Path(f"/proc/{pid}").exists() for pid, _ in fake_hl_smi.starts())


def test_hlml_is_preferred_and_gives_the_driver_version(fake_modules: None, no_hl_smi: None) -> None:
    snapshot = read_once()
    assert snapshot.source == "hlml"
    assert snapshot.driver_version == "1.19.1-6f47ddd"
    assert [d.module_id for d in snapshot.devices] == [2, 6, 3, 7, 0, 4, 5, 1]
    seven = snapshot.devices[7]
    assert (seven.memory_used_mib, seven.power_draw_w, seven.power_cap_w, seven.temperature_c) == (
        17538,
        100,
        600,
        30,
    )
    assert seven.uuid is None  # the table sample has none: HLML's NotSupported becomes unknown


def test_hlml_rations_the_leaky_temperature_and_slow_ecc_calls(fake_modules: None) -> None:
    import pyhlml

    source = HlmlSource()
    for _ in range(20):
        reading = source.read()
    source.close()
    assert reading.devices[0].temperature_c == 22  # kept between the rationed reads
    assert pyhlml.calls["hlmlDeviceGetTemperature"] == 2 * 8  # ticks 0 and 10, not 20 × 8
    assert pyhlml.calls["hlmlDeviceGetTotalECCErrors"] == 2 * 8
    assert pyhlml.calls["hlmlDeviceGetMemoryInfo"] == 20 * 8


def test_hwmon_temperature_replaces_the_leaky_hlml_call(fake_modules: None, tmp_path: Path) -> None:
    import pyhlml

    for index in range(8):
        hwmon = tmp_path / "class" / "accel" / f"accel{index}" / "device" / "hwmon" / "hwmon0"
        hwmon.mkdir(parents=True)
        for sensor, (label, milli) in enumerate(
            (("On Chip 0", 41000), ("On Chip 1", 43000), ("HBM 0", 60000)), 1
        ):
            (hwmon / f"temp{sensor}_label").write_text(label)
            (hwmon / f"temp{sensor}_input").write_text(str(milli))
    source = HlmlSource(sys_root=str(tmp_path))
    reading = source.read()
    source.close()
    assert {d.temperature_c for d in reading.devices} == {43.0}  # hottest On Chip, not HBM
    assert pyhlml.calls["hlmlDeviceGetTemperature"] == 0


def test_hlml_without_libhlml_falls_back_to_hl_smi(
    fake_modules: None,
    fake_hl_smi: FakeHlSmi,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FAKE_PYHLML_FAULT", "nolib")
    snapshot = read_once()
    assert snapshot.source == "hl-smi"
    assert any("HLML could not start" in e for e in snapshot.errors)


def test_nvml_is_used_when_there_is_no_gaudi_source(
    fake_modules: None, no_hl_smi: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PYHLML_FAULT", "nolib")
    snapshot = read_once()
    assert (snapshot.source, snapshot.driver_version) == ("nvml", "550.127.05")
    assert [(d.name, d.temperature_c, d.power_draw_w, d.power_cap_w) for d in snapshot.devices] == [
        ("NVIDIA A40", 29, 23, 300),
        ("NVIDIA A40", 30, 24, 300),
        ("NVIDIA A40", 27, 15, 300),
    ]
    assert snapshot.devices[0].memory_total_mib == 46068


def test_read_once_never_raises(monkeypatch: pytest.MonkeyPatch, no_hl_smi: None) -> None:
    def boom(*_args: object) -> None:
        raise RuntimeError("sysfs exploded")

    monkeypatch.setattr(query.faults, "most_specific", boom)
    snapshot = read_once()
    assert snapshot.source == "none"
    assert "RuntimeError: sysfs exploded" in snapshot.errors[-1]


def test_sysfs_gives_modules_numa_and_driver_state(tmp_path: Path) -> None:
    for index, module in ((0, 4), (1, 5)):
        device = tmp_path / "class" / "accel" / f"accel{index}" / "device"
        device.mkdir(parents=True)
        (device / "module_id").write_text(f"{module}\n")
    pci = tmp_path / "bus" / "pci" / "devices" / "0000:43:00.0"
    pci.mkdir(parents=True)
    (pci / "numa_node").write_text("1\n")
    assert sysfs.module_ids(str(tmp_path)) == {0: 4, 1: 5}
    assert sysfs.numa_node("0000:43:00.0", str(tmp_path)) == 1
    assert sysfs.numa_node("0000:44:00.0", str(tmp_path)) is None
    assert not sysfs.driver_loaded(str(tmp_path))
