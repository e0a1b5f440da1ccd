"""Chat: a Transformers model on the card."""

from __future__ import annotations

from textual.app import ComposeResult

from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.screens.placeholder import coming


class ChatScreen(PanelScreen):
    TITLE = "Chat"
    HELP = "Talk to a Transformers model running on the card, streamed and measured."

    def compose_body(self) -> ComposeResult:
        yield coming(
            "Chat — coming next: the demo model, a local folder or a Hub id on the card "
            "(device_map from the accelerator), streamed answers, Esc to stop, 4-bit, "
            "torch.compile, and first-token latency, tokens/s and device memory."
        )
