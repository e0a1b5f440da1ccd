"""Checklist: the Gaudi environment doctor."""

from __future__ import annotations

from textual.app import ComposeResult

from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.screens.placeholder import coming


class ChecklistScreen(PanelScreen):
    TITLE = "Checklist"
    HELP = "Environment doctor: every check of the Gaudi stack, with a fix for each finding."

    def compose_body(self) -> ComposeResult:
        yield coming(
            "Checklist — coming next: the Gaudi stack, habana_frameworks, PT_ENABLE_INT64_SUPPORT, "
            "Accelerate ≥ 1.5.0, is_torch_hpu_available(), modes, versions and busy cards, "
            "each finding with a fix; and 'explain this error'."
        )
