"""A fixed pair of conversations for Pilot tests, the snapshot and the README screenshot."""

from __future__ import annotations

from gaudi_tui.core.chat.metrics import AnswerMetrics, MemoryReport
from gaudi_tui.core.chat.store import ChatStore

ANSWER = """HL-225 is the **Gaudi 2** OAM module, with 96 GB of HBM2E memory.

| card | generation | memory |
|---|---|---|
| HL-205 | Gaudi | 32 GB |
| HL-225 | Gaudi 2 | 96 GB |
| HL-325L | Gaudi 3 | 128 GB |
"""
METRICS = AnswerMetrics(0.012, 212.4, 16, 41, 0.21, memory=MemoryReport("cpu", 376 << 20, 381 << 20))


def seed_conversations() -> None:
    """Two conversations in the current GAUDI_TUI_HOME's store; the second is the most recent."""
    store = ChatStore()
    cards = store.create(system_prompt="Answer briefly.")
    store.add_message(cards.id, "user", "What is HL-225?")
    store.add_message(cards.id, "assistant", ANSWER, model="demo model", metrics=METRICS)
    watch = store.create()
    store.add_message(watch.id, "user", "How do I watch the cards?")
    store.add_message(
        watch.id,
        "assistant",
        "Run `hl-smi -l 1`, or press 1 in gaudi-tui for the device map.",
        model="demo model",
        metrics=AnswerMetrics(0.009, 205.0, 18, 22, 0.12, memory=MemoryReport("cpu", 376 << 20, 381 << 20)),
    )
    store.close()
