"""Training: Trainer jobs that survive the panel."""

from __future__ import annotations

from textual.app import ComposeResult

from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.screens.placeholder import coming


class TrainingScreen(PanelScreen):
    TITLE = "Training"
    HELP = "Launch Trainer jobs from the keyboard and watch them live; they survive the panel."

    def compose_body(self) -> ComposeResult:
        yield coming(
            "Training — coming next: demo fine-tune, LoRA and QLoRA jobs launched from a form, "
            "multi-card through accelerate launch/torchrun, live loss and throughput, "
            "graceful stop, resume, and re-attach after the panel or SSH session dies."
        )
