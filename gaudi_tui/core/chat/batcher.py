"""Streamed text batched for the pane (at most 3 times a second) and saved as it grows."""

from __future__ import annotations

import time
from collections.abc import Callable

from gaudi_tui.core.chat.store import ChatStore

CHUNK_INTERVAL_S = 1 / 3
"""Text reaches the owner at most 3 times a second: each Markdown append re-lays out and redraws the
chat log (~30 ms of CPU a frame on 2 cores), CPU that a CPU-only engine on the same host needs
(bench/chat.py measures both); three frames a second still reads as streaming."""
SAVE_INTERVAL_S = 1.0
"""A streaming answer is written to the store this often, so a crash loses at most a second."""


class ChunkBatcher:
    """Collects streamed text (in the job's thread) and emits it at most every `chunk_s`; saves the
    answer so far to the store every `save_s`."""

    def __init__(
        self,
        store: ChatStore,
        message_id: int,
        emit: Callable[[str], None],
        chunk_s: float = CHUNK_INTERVAL_S,
        save_s: float = SAVE_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.message_id = message_id
        self.emit = emit
        self.chunk_s = chunk_s
        self.save_s = save_s
        self.clock = clock
        self.pending: list[str] = []
        self.text: list[str] = []
        self.emitted_at = 0.0
        self.saved_at = clock()

    def add(self, text: str) -> None:
        self.pending.append(text)
        self.text.append(text)
        now = self.clock()
        if now - self.emitted_at >= self.chunk_s:
            self.flush()
            self.emitted_at = now
        if now - self.saved_at >= self.save_s:
            self.store.update_message(self.message_id, "".join(self.text), "partial")
            self.saved_at = now

    def flush(self) -> None:
        if self.pending:
            self.emit("".join(self.pending))
            self.pending.clear()
