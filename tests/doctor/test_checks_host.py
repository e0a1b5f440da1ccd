"""driver.loaded, hlsmi.present, host.container, cards.detected, cards.busy: passing and failing hosts."""

from __future__ import annotations

import stat
from pathlib import Path

from gaudi_tui.core.devices.model import DeviceProcess, DeviceSnapshot
from gaudi_tui.core.doctor.checks import host
from gaudi_tui.core.doctor.context import DiskUsage
from tests.doctor.hosts import FakeHolder, gaudi2_snapshot, gaudi_root, make_ctx, unavailable


def test_driver_loaded_with_device_nodes(tmp_path: Path) -> None:
    result = host.driver_loaded(make_ctx(tmp_path))
    assert result.status == "ok"
    assert "1.19.1-6f47ddd" in result.finding
    assert "8 device node(s)" in result.finding
    assert "/dev/accel/accel0" in result.finding and "/dev/accel/accel7" in result.finding


def test_driver_loaded_legacy_hl_nodes_without_sysfs(tmp_path: Path) -> None:
    root = tmp_path / "bare"
    (root / "dev").mkdir(parents=True)
    for i in range(2):
        (root / f"dev/hl{i}").touch()
        (root / f"dev/hl_controlD{i}").touch()
    result = host.driver_loaded(make_ctx(tmp_path, root=root))
    assert result.status == "ok"
    assert "2 device node(s) (/dev/hl0, /dev/hl1)" in result.finding


def test_driver_module_without_nodes_fails_with_container_fix(tmp_path: Path) -> None:
    root = gaudi_root(tmp_path / "bare", cards=0)
    result = host.driver_loaded(make_ctx(tmp_path, root=root))
    assert result.status == "fail"
    assert "no /dev/accel/accel* or /dev/hl* node" in result.finding
    assert "--runtime=habana" in result.fix


def test_driver_not_loaded_fails(tmp_path: Path) -> None:
    (tmp_path / "bare").mkdir()
    result = host.driver_loaded(make_ctx(tmp_path, root=tmp_path / "bare"))
    assert result.status == "fail"
    assert result.finding.startswith("habanalabs driver not loaded")
    assert "modprobe habanalabs" in result.fix


def test_hlsmi_present_and_missing(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "hl-smi"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    found = host.hlsmi_present(make_ctx(tmp_path, {"PATH": str(bin_dir)}))
    assert (found.status, found.finding) == ("ok", f"hl-smi found at {tool}")
    missing = host.hlsmi_present(make_ctx(tmp_path, {"PATH": str(tmp_path / "empty")}))
    assert missing.status == "fail"
    assert "habanalabs-installer.sh" in missing.fix


def test_container_detection(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    assert host.host_container(ctx).finding == "not in a container"
    (ctx.root / ".dockerenv").touch()
    inside = host.host_container(ctx)
    assert inside.status == "ok"
    assert inside.finding == "in a container (docker: /.dockerenv)"
    assert "N/A" in inside.explanation and "sudo hl-smi" in inside.explanation


def test_container_from_cgroup_and_kubernetes(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    (ctx.root / "proc/1").mkdir(parents=True)
    (ctx.root / "proc/1/cgroup").write_text("0::/kubepods/besteffort/pod1234/abcd\n")
    assert host.detect_container(ctx) == host.Container("kubepods", "/proc/1/cgroup")
    pod = make_ctx(tmp_path, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    assert host.detect_container(pod).kind == "Kubernetes pod"


def test_container_without_ipc_host_warns(tmp_path: Path) -> None:
    def small_shm(path: str) -> DiskUsage:
        return DiskUsage(64 << 20, 0, 64 << 20) if path.endswith("/dev/shm") else DiskUsage(1, 0, 1)

    ctx = make_ctx(tmp_path, disk_usage=small_shm)
    (ctx.root / ".dockerenv").touch()
    (ctx.root / "dev/shm").mkdir()
    result = host.host_container(ctx)
    assert result.status == "warn"
    assert "/dev/shm is only 64 MiB" in result.finding
    assert "--ipc=host" in result.fix


def test_cards_detected_reads_the_device_map(tmp_path: Path) -> None:
    result = host.cards_detected(make_ctx(tmp_path, snapshot=gaudi2_snapshot()))
    assert result.status == "ok"
    assert result.finding == "8 card(s): 8 × HL-225 (Gaudi 2), driver 1.19.1-6f47ddd"


def test_cards_detected_fails_without_cards_and_says_why(tmp_path: Path) -> None:
    empty = DeviceSnapshot("none", errors=("hl-smi not found on PATH",))
    result = host.cards_detected(make_ctx(tmp_path, snapshot=empty))
    assert result.status == "fail"
    assert result.finding == "no Gaudi card detected (hl-smi not found on PATH)"


def test_cards_detected_skips_without_device_map(tmp_path: Path) -> None:
    result = host.cards_detected(make_ctx(tmp_path))
    assert result.status == "skip"
    assert result.finding == "no device map: no device query in this test"


def test_cards_detected_warns_when_nodes_disagree(tmp_path: Path) -> None:
    root = gaudi_root(tmp_path / "four", cards=4)
    result = host.cards_detected(make_ctx(tmp_path, root=root, snapshot=gaudi2_snapshot()))
    assert result.status == "warn"
    assert "but 4 device node(s)" in result.finding


def test_cards_detected_flags_first_generation_gaudi(tmp_path: Path) -> None:
    snapshot = gaudi2_snapshot(name="HL-205", product="Gaudi")
    result = host.cards_detected(make_ctx(tmp_path, snapshot=snapshot))
    assert "no fp16" in result.explanation and "NF4" in result.explanation


def test_no_card_busy(tmp_path: Path) -> None:
    result = host.cards_busy(make_ctx(tmp_path, snapshot=gaudi2_snapshot(processes=())))
    assert result.status == "ok"
    assert result.finding == "no card of this host is held by another process"


def test_busy_cards_warn_with_holders_and_a_free_set(tmp_path: Path) -> None:
    holders = [FakeHolder(3, 4242, "alice", "python train.py"), FakeHolder(5, 4243, "bob", "python serve.py")]
    ctx = make_ctx(tmp_path, snapshot=gaudi2_snapshot(), holders=holders)
    result = host.cards_busy(ctx)
    assert result.status == "warn"
    assert result.finding == (
        "3 of 8 card(s) of this host busy: card 3 (module 7) pid 4242 alice: python train.py; "
        "card 5 (module 4) pid 4243 bob: python serve.py; card 7 (module 1) pid 107684 ?: ray::_RayTrainW"
    )
    assert "(`kill 4242 4243 107684`)" in result.fix
    # modules 7, 4 and 1 are held: no 4-card set is free, {2,3} is the first free 2-card set
    assert "export HABANA_VISIBLE_MODULES=2,3" in result.fix


def test_every_chosen_card_busy_fails(tmp_path: Path) -> None:
    holders = [FakeHolder(3, 4242, "alice", "python train.py")]
    env = {"HABANA_VISIBLE_MODULES": "6,7"}
    result = host.cards_busy(make_ctx(tmp_path, env, snapshot=gaudi2_snapshot(processes=()), holders=holders))
    assert result.status == "warn"  # module 6 (card 1) is free
    env = {"HABANA_VISIBLE_MODULES": "7"}
    result = host.cards_busy(make_ctx(tmp_path, env, snapshot=gaudi2_snapshot(processes=()), holders=holders))
    assert result.status == "fail"
    assert result.finding.startswith("1 of 1 card(s) of HABANA_VISIBLE_MODULES=7 busy")
    assert "HABANA_VISIBLE_MODULES=0" in result.fix


def test_doctors_own_children_are_not_holders(tmp_path: Path) -> None:
    ctx = make_ctx(
        tmp_path, snapshot=gaudi2_snapshot(processes=()), holders=[FakeHolder(0, 999, "me", "probe")]
    )
    ctx.track_child(999)
    assert host.cards_busy(ctx).status == "ok"


def test_busy_in_a_container_explains_invisible_holders(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, snapshot=gaudi2_snapshot(processes=()))
    (ctx.root / ".dockerenv").touch()
    result = host.cards_busy(ctx)
    assert result.status == "ok"
    assert "other containers" in result.explanation


def test_busy_skips_without_any_source(tmp_path: Path) -> None:
    result = host.cards_busy(make_ctx(tmp_path, holders_provider=unavailable("no /proc scan")))
    assert result.status == "skip"
    assert "no /proc scan" in result.finding


def test_busy_uses_hl_smi_processes_when_the_scan_is_missing(tmp_path: Path) -> None:
    snapshot = gaudi2_snapshot(processes=(DeviceProcess(2, 77, "python3", 1024, "root"),))
    result = host.cards_busy(make_ctx(tmp_path, snapshot=snapshot, holders_provider=unavailable("no scan")))
    assert result.status == "warn"
    assert "card 2 (module 3) pid 77 root: python3" in result.finding
