"""The conversation store (SQLite, WAL) and the exports."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from gaudi_tui.core.chat import export
from gaudi_tui.core.chat.metrics import AnswerMetrics, MemoryReport
from gaudi_tui.core.chat.options import GenerationParams
from gaudi_tui.core.chat.store import ChatStore, default_path, prompt_messages

METRICS = AnswerMetrics(0.02, 150.0, 12, 30, 0.3, stopped=True, memory=MemoryReport("cpu", 1 << 28, 1 << 28))


def test_store_lives_in_the_data_folder_in_wal_mode(gaudi_home: Path) -> None:
    store = ChatStore()
    assert default_path() == gaudi_home / "data" / "chat.sqlite3"
    mode = sqlite3.connect(store.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    store.close()


def test_user_message_is_committed_at_once_and_names_the_chat() -> None:
    store = ChatStore()
    conversation = store.create()
    store.add_message(conversation.id, "user", "What is   hl-smi, and how do I read its memory column?")
    other = sqlite3.connect(store.path)  # another connection sees it without any close or commit call
    assert other.execute("SELECT content FROM messages").fetchone()[0].startswith("What is   hl-smi")
    title = store.conversation(conversation.id).title
    assert title == "What is hl-smi, and how do I read its m…"
    store.add_message(conversation.id, "user", "second question")
    assert store.conversation(conversation.id).title == title


def test_partial_answer_and_params_survive_a_restart() -> None:
    store = ChatStore()
    conversation = store.create(system_prompt="Be brief.")
    store.set_params(conversation.id, GenerationParams(max_new_tokens=32, seed=7))
    store.add_message(conversation.id, "user", "Hi")
    answer = store.add_message(conversation.id, "assistant", "", status="partial", model="demo model")
    store.update_message(answer.id, "Hello th", "partial", METRICS, "stopped by you")
    store.close()

    reopened = ChatStore()
    (again,) = reopened.conversations()
    assert again.params == GenerationParams(max_new_tokens=32, seed=7)
    user, stored = reopened.messages(again.id)
    assert (stored.content, stored.status, stored.model, stored.note) == (
        "Hello th",
        "partial",
        "demo model",
        "stopped by you",
    )
    assert stored.metrics == METRICS
    assert prompt_messages(again, [user, stored]) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello th"},
    ]


def test_rename_delete_and_order() -> None:
    store = ChatStore()
    first, second = store.create(), store.create()
    store.add_message(first.id, "user", "newer activity")
    assert [c.id for c in store.conversations()] == [first.id, second.id]
    store.rename(second.id, "  Gaudi   memory ")
    assert store.conversation(second.id).title == "Gaudi memory"
    store.delete(first.id)
    assert [c.id for c in store.conversations()] == [second.id]
    assert store.messages(first.id) == []  # messages go with their conversation


def test_failed_empty_answers_are_not_sent_to_the_model() -> None:
    store = ChatStore()
    conversation = store.create()
    store.add_message(conversation.id, "user", "Hi")
    store.add_message(conversation.id, "assistant", "", status="error", note="engine died")
    assert prompt_messages(conversation, store.messages(conversation.id)) == [
        {"role": "user", "content": "Hi"}
    ]


def test_export_writes_markdown_and_json(gaudi_home: Path) -> None:
    store = ChatStore()
    conversation = store.create(system_prompt="Be brief.")
    store.add_message(conversation.id, "user", "What is HL-225?")
    store.add_message(
        conversation.id, "assistant", "The **Gaudi 2** OAM module.", "partial", "demo model", METRICS
    )
    conversation = store.conversation(conversation.id)
    markdown, data = export.export(conversation, store.messages(conversation.id))
    assert markdown.parent == gaudi_home / "data" / "exports"
    assert markdown.name == f"what-is-hl-225-{conversation.id}.md"
    text = markdown.read_text()
    assert text.startswith("# What is HL-225?\n\n> System prompt: Be brief.\n\n**You:**\n\nWhat is HL-225?")
    assert "**demo model:**\n\nThe **Gaudi 2** OAM module.\n\n_stopped before the end · TTFT 20 ms" in text
    loaded = json.loads(data.read_text())
    assert loaded["messages"][1]["status"] == "partial"
    assert loaded["messages"][1]["metrics"]["decode_tps"] == 150.0
    assert loaded["params"]["max_new_tokens"] == 256


OLD_SCHEMA = """
CREATE TABLE conversations (id INTEGER PRIMARY KEY, title TEXT NOT NULL, system_prompt TEXT NOT NULL
    DEFAULT '', params TEXT NOT NULL DEFAULT '{}', created REAL NOT NULL, updated REAL NOT NULL);
CREATE TABLE messages (id INTEGER PRIMARY KEY, conversation_id INTEGER NOT NULL REFERENCES
    conversations(id) ON DELETE CASCADE, role TEXT NOT NULL, content TEXT NOT NULL, status TEXT NOT
    NULL DEFAULT 'complete', model TEXT, metrics TEXT, note TEXT, created REAL NOT NULL);
INSERT INTO conversations VALUES (1, 'Old chat', '', '{}', 1.0, 1.0);
INSERT INTO messages VALUES (1, 1, 'user', 'Hi', 'complete', NULL, NULL, NULL, 1.0);
INSERT INTO messages VALUES (2, 1, 'assistant', 'Hello', 'complete', 'demo model', NULL, NULL, 2.0);
"""
"""The schema before answers recorded who answered (user_version 0)."""


def test_an_older_database_gains_the_answered_by_columns_and_keeps_its_messages(tmp_path: Path) -> None:
    from gaudi_tui.core.chat.trained import Provenance

    path = tmp_path / "chat.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(OLD_SCHEMA)
    old.close()
    store = ChatStore(path)
    assert [m.content for m in store.messages(1)] == ["Hi", "Hello"]
    assert store.messages(1)[1].provenance is None  # nobody recorded who answered then
    who = Provenance(
        "LoRA · ab12 · checkpoint-30", "demo model", "/runs/x/checkpoints/checkpoint-30", "x", "checkpoint-30"
    )
    store.add_message(1, "assistant", "Tuned.", model=who.label, provenance=who)
    store.close()
    again = ChatStore(path)  # opening a current database changes nothing
    assert again.messages(1)[-1].provenance == who
    version = sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0]
    assert version == 2
    data = export.to_json(again.conversation(1), again.messages(1))
    assert data["messages"][-1]["answered_by"]["checkpoint"] == "checkpoint-30"
    assert data["messages"][1]["answered_by"] is None
    markdown = export.to_markdown(again.conversation(1), again.messages(1))
    assert "answered by LoRA · ab12 · checkpoint-30 (base demo model, adapter)" in markdown
    again.close()
