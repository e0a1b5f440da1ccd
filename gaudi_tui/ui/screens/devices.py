"""Devices: the hl-smi device map."""

from __future__ import annotations

from textual.app import ComposeResult

from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.screens.placeholder import coming


class DevicesScreen(PanelScreen):
    TITLE = "Devices"
    HELP = "Live per-card metrics and history, card holders, and choosing cards for a job."

    def compose_body(self) -> ComposeResult:
        yield coming(
            "Devices — coming next: live per-card metrics from hl-smi/HLML with history, "
            "which process holds which card, index ↔ module-ID mapping, and choosing cards "
            "for a job (HABANA_VISIBLE_MODULES)."
        )
