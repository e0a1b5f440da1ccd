"""Controlled hosts for the doctor's tests: environments, filesystem roots, package metadata,
device snapshots and card holders.

The device snapshot replays the real 8 × HL-225 capture
`gaudi_tui/data/hl-smi/gaudi2-hl225-x8-1.20.0-busy-table.txt` (driver 1.19.1, cards 3, 5 and 7 in
use, pid 107684 on card 7), with the index → module map of `gaudi2e-index-module-1.24.0.csv`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from gaudi_tui.core.devices.model import Device, DeviceProcess, DeviceSnapshot
from gaudi_tui.core.doctor.context import CheckContext, DiskUsage, Holder, Unavailable
from tests.conftest import FAKES, ROOT

GIB = 1 << 30
MODULE_OF_INDEX = {0: 2, 1: 6, 2: 3, 3: 7, 4: 0, 5: 4, 6: 5, 7: 1}
USED_MIB = {0: 768, 1: 768, 2: 768, 3: 96565, 4: 768, 5: 96564, 6: 768, 7: 17538}


def gaudi2_snapshot(
    driver: str | None = "1.19.1-6f47ddd",
    processes: Sequence[DeviceProcess] = (DeviceProcess(7, 107684, "ray::_RayTrainW", 16770),),
    name: str = "HL-225",
    product: str = "Gaudi 2",
) -> DeviceSnapshot:
    devices = tuple(
        Device(
            index=i,
            name=name,
            module_id=MODULE_OF_INDEX[i],
            product=product,
            memory_used_mib=USED_MIB[i],
            memory_total_mib=98304,
        )
        for i in range(8)
    )
    return DeviceSnapshot("hl-smi", devices, tuple(processes), "hl-1.20.0-fw-58.1.1.1", driver)


@dataclass(frozen=True)
class FakeHolder:
    """Stands in for `gaudi_tui.core.devices.holders.CardHolder` (same fields), built by the devices area."""

    index: int
    pid: int
    user: str | None
    command: str
    started: float | None = None
    device_path: str = ""


def unavailable(why: str) -> Callable[[], object]:
    """A provider that cannot answer, as the device query on a branch without it."""

    def provider() -> object:
        raise Unavailable(why)

    return provider


def fake_dist(folder: Path, name: str, version: str) -> Path:
    """A `.dist-info` folder so importlib.metadata reports `name` at `version` from `folder`."""
    info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return folder


def gaudi_root(
    folder: Path, cards: int = 8, driver: str | None = "1.19.1-6f47ddd", module: bool = True
) -> Path:
    """A filesystem root with the habanalabs module in /sys and `cards` compute nodes in /dev/accel."""
    if module:
        (folder / "sys/module/habanalabs").mkdir(parents=True)
        if driver:
            (folder / "sys/module/habanalabs/version").write_text(driver + "\n")
    (folder / "dev/accel").mkdir(parents=True)
    for i in range(cards):
        (folder / f"dev/accel/accel{i}").touch()
        (folder / f"dev/accel/accel_controlD{i}").touch()
    return folder


def plenty_of_disk(path: str) -> DiskUsage:
    return DiskUsage(2000 * GIB, 500 * GIB, 1500 * GIB)


def make_ctx(
    tmp: Path,
    env: Mapping[str, str | None] | None = None,
    *,
    site: Sequence[Path] = (),
    fakes: bool = True,
    snapshot: DeviceSnapshot | None = None,
    holders: Sequence[Holder] = (),
    **kwargs: object,
) -> CheckContext:
    """A context whose every input is controlled: `env` on top of a clean base (None removes a
    variable), `site` folders (fake metadata) first on PYTHONPATH, then the fake habana_frameworks
    when `fakes`."""
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    path = [str(p) for p in site] + ([str(FAKES)] if fakes else []) + [str(ROOT)]
    base: dict[str, str | None] = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "HF_HOME": str(tmp / "hf"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(path),
    }
    base.update(env or {})
    settings: dict[str, object] = {
        "root": tmp / "root" if (tmp / "root").exists() else gaudi_root(tmp / "root"),
        "snapshot_provider": (lambda: snapshot) if snapshot else unavailable("no device query in this test"),
        "holders_provider": lambda: list(holders),
        "disk_usage": plenty_of_disk,
        "timeout": 60.0,
    }
    settings.update(kwargs)
    return CheckContext(env={k: v for k, v in base.items() if v is not None}, **settings)  # type: ignore[arg-type]


@dataclass
class Gate:
    """A check body that blocks until released: a hung in-process check."""

    released: threading.Event = field(default_factory=threading.Event)

    def __call__(self, ctx: CheckContext) -> None:
        self.released.wait(30)
        raise AssertionError("released")


SNAPSHOT_DIR = Path("/tmp/gaudi-tui-doctor-snapshot")
"""A fixed folder, so paths shown on screen are the same in every run and every checkout."""


def demo_gaudi_host(site_dir: Path) -> Callable[[threading.Event], CheckContext]:
    """A Gaudi 2 host with a few problems, for the snapshot test and the README screenshot.

    Replayed device map (driver 1.19.1), Intel's torch and a plugin one release behind (N−1),
    PT_ENABLE_INT64_SUPPORT unset, and card 3 (module 7) held by another user's job while
    HABANA_VISIBLE_MODULES=6,7 asks for it.
    """
    bin_dir = SNAPSHOT_DIR / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    tool = bin_dir / "hl-smi"
    if not tool.exists():
        tool.write_text("#!/bin/sh\nexit 0\n")
        tool.chmod(0o755)
    for name, version in (
        ("torch", "2.6.0+hpu.1.18.0.524.git4a8e4ba"),
        ("habana-torch-plugin", "1.18.0.524"),
        ("accelerate", "1.15.0"),  # the host's own, not whichever release this machine installed
    ):
        fake_dist(site_dir, name, version)
    root = site_dir / "root"
    if not root.exists():
        gaudi_root(root)
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        "HOME": str(SNAPSHOT_DIR / "home"),
        "HF_HOME": str(SNAPSHOT_DIR / "hf"),
        "HF_HUB_OFFLINE": "1",
        "PT_HPU_LAZY_MODE": "1",
        "HABANA_VISIBLE_MODULES": "6,7",
        "PYTHONPATH": os.pathsep.join([str(site_dir), str(FAKES), str(ROOT)]),
    }
    holders = [FakeHolder(3, 48213, "alice", "python run_lora_clm.py --model_name_or_path Qwen/Qwen3-8B")]

    def factory(cancel: threading.Event) -> CheckContext:
        return CheckContext(
            env=env,
            root=root,
            snapshot_provider=gaudi2_snapshot,
            holders_provider=lambda: holders,
            disk_usage=plenty_of_disk,
            timeout=90.0,
            cancel=cancel,
        )

    return factory


def probe_children() -> list[psutil.Process]:
    """This test process's doctor probe children still alive."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "gaudi_tui.core.doctor.probe" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found
