"""SVG snapshots of each screen at 100×30 (`make screenshots` writes the same views for the README).

What they show must not depend on the host: the Devices screen gets no device source (no hl-smi,
HLML or NVML, empty /sys and /dev), and the Fleet screen no Prometheus (tests/conftest.py unsets
$GAUDI_TUI_PROMETHEUS), so they look the same on a Gaudi host as here."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.screen import Screen

from gaudi_tui.core.devices.feed import MonitorConfig
from gaudi_tui.ui.app import GaudiApp
from tests.conftest import CPU


@pytest.mark.parametrize("key", ["1", "2", "3", "4", "5", "question_mark"])
def test_screen_snapshot(snap_compare, key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    empty = tmp_path / "no-devices"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no hl-smi, whatever the host has
    config = MonitorConfig(use_hlml=False, use_nvml=False, sys_root=str(empty), dev_root=str(empty))

    class NoDevicesApp(GaudiApp):
        def _devices_screen(self) -> Screen:
            from gaudi_tui.ui.screens.devices import DevicesScreen

            return DevicesScreen(config)

    app = NoDevicesApp(accelerator=CPU, hostname="gaudi-host")
    assert snap_compare(app, terminal_size=(100, 30), press=[key])
