"""Conversations in SQLite (WAL) in the data folder.

Every write commits at once: the user's message is on disk before generation starts, and an
answer is saved while it streams (status "partial") and finalised as "complete", "partial"
(stopped or interrupted) or "error". Safe to call from several threads.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gaudi_tui.core import paths
from gaudi_tui.core.chat.metrics import AnswerMetrics
from gaudi_tui.core.chat.options import GenerationParams
from gaudi_tui.core.chat.trained import Provenance

DB_NAME = "chat.sqlite3"
DEFAULT_TITLE = "New chat"
TITLE_CHARS = 40
Role = Literal["user", "assistant"]
Status = Literal["complete", "partial", "error"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    system_prompt TEXT NOT NULL DEFAULT '',
    params TEXT NOT NULL DEFAULT '{}',
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'complete' CHECK (status IN ('complete', 'partial', 'error')),
    model TEXT,
    metrics TEXT,
    note TEXT,
    created REAL NOT NULL,
    base TEXT,
    adapter TEXT,
    run_id TEXT,
    checkpoint TEXT,
    merged INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages (conversation_id, id);
"""
SCHEMA_VERSION = 2
MIGRATIONS = {
    2: (
        # which weights answered each message (core/chat/trained.Provenance)
        "ALTER TABLE messages ADD COLUMN base TEXT",
        "ALTER TABLE messages ADD COLUMN adapter TEXT",
        "ALTER TABLE messages ADD COLUMN run_id TEXT",
        "ALTER TABLE messages ADD COLUMN checkpoint TEXT",
        "ALTER TABLE messages ADD COLUMN merged INTEGER NOT NULL DEFAULT 0",
    ),
}
"""What turns a database of the version before into this one; `PRAGMA user_version` counts them."""


@dataclass(frozen=True)
class Conversation:
    id: int
    title: str
    system_prompt: str
    params: GenerationParams
    created: float
    updated: float


@dataclass(frozen=True)
class StoredMessage:
    id: int
    conversation_id: int
    role: Role
    content: str
    status: Status
    model: str | None
    metrics: AnswerMetrics | None
    note: str | None
    created: float
    provenance: Provenance | None = None
    """Which base, adapter, run and checkpoint answered (None for questions and older answers)."""


def default_path() -> Path:
    return paths.data_dir() / DB_NAME


def title_from(text: str) -> str:
    """A conversation title from its first question."""
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


class ChatStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    def _migrate(self) -> None:
        """Create the tables, or bring an older database up to SCHEMA_VERSION (in one transaction)."""
        with self._lock:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            exists = self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'messages'"
            ).fetchone()
            if exists and version < SCHEMA_VERSION:
                self._db.execute("BEGIN")
                for step in range(max(version, 1) + 1, SCHEMA_VERSION + 1):
                    for statement in MIGRATIONS[step]:
                        self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                self._db.execute("COMMIT")
            self._db.executescript(SCHEMA)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        with self._lock:
            return self._db.execute(sql, args)

    def _all(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # ---- conversations -------------------------------------------------------------------
    def create(
        self, title: str = DEFAULT_TITLE, system_prompt: str = "", params: GenerationParams | None = None
    ) -> Conversation:
        now = time.time()
        params_json = json.dumps((params or GenerationParams()).to_dict())
        cursor = self._run(
            "INSERT INTO conversations (title, system_prompt, params, created, updated) VALUES (?, ?, ?, ?, ?)",
            (title, system_prompt, params_json, now, now),
        )
        return self.conversation(int(cursor.lastrowid or 0))

    def conversations(self) -> list[Conversation]:
        """Most recently used first."""
        rows = self._all("SELECT * FROM conversations ORDER BY updated DESC, id DESC")
        return [_conversation(row) for row in rows]

    def conversation(self, conversation_id: int) -> Conversation:
        rows = self._all("SELECT * FROM conversations WHERE id = ?", (conversation_id,))
        if not rows:
            raise KeyError(f"no conversation {conversation_id}")
        return _conversation(rows[0])

    def rename(self, conversation_id: int, title: str) -> None:
        title = " ".join(title.split())
        if not title:
            raise ValueError("A conversation needs a title.")
        self._run("UPDATE conversations SET title = ? WHERE id = ?", (title, conversation_id))

    def delete(self, conversation_id: int) -> None:
        self._run("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    def set_system_prompt(self, conversation_id: int, text: str) -> None:
        self._run("UPDATE conversations SET system_prompt = ? WHERE id = ?", (text, conversation_id))

    def set_params(self, conversation_id: int, params: GenerationParams) -> None:
        self._run(
            "UPDATE conversations SET params = ? WHERE id = ?",
            (json.dumps(params.to_dict()), conversation_id),
        )

    # ---- messages ------------------------------------------------------------------------
    def messages(self, conversation_id: int) -> list[StoredMessage]:
        rows = self._all("SELECT * FROM messages WHERE conversation_id = ? ORDER BY id", (conversation_id,))
        return [_message(row) for row in rows]

    def add_message(
        self,
        conversation_id: int,
        role: Role,
        content: str,
        status: Status = "complete",
        model: str | None = None,
        metrics: AnswerMetrics | None = None,
        note: str | None = None,
        provenance: Provenance | None = None,
    ) -> StoredMessage:
        """Append and commit; the first question names a conversation still called "New chat"."""
        now = time.time()
        p = provenance
        where = (p.base, p.adapter, p.run_id, p.checkpoint, int(p.merged)) if p else (None,) * 4 + (0,)
        with self._lock:
            self._db.execute("BEGIN")
            cursor = self._db.execute(
                "INSERT INTO messages (conversation_id, role, content, status, model, metrics, note, created, "
                "base, adapter, run_id, checkpoint, merged) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (conversation_id, role, content, status, model, _metrics_json(metrics), note, now, *where),
            )
            self._db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, conversation_id))
            if role == "user":
                self._db.execute(
                    "UPDATE conversations SET title = ? WHERE id = ? AND title = ?",
                    (title_from(content), conversation_id, DEFAULT_TITLE),
                )
            self._db.execute("COMMIT")
            row = self._db.execute("SELECT * FROM messages WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return _message(row)

    def update_message(
        self,
        message_id: int,
        content: str,
        status: Status,
        metrics: AnswerMetrics | None = None,
        note: str | None = None,
    ) -> None:
        self._run(
            "UPDATE messages SET content = ?, status = ?, metrics = ?, note = ? WHERE id = ?",
            (content, status, _metrics_json(metrics), note, message_id),
        )


def _metrics_json(metrics: AnswerMetrics | None) -> str | None:
    return json.dumps(metrics.to_dict()) if metrics else None


def _conversation(row: sqlite3.Row) -> Conversation:
    try:
        params = GenerationParams.from_dict(json.loads(row["params"] or "{}"))
    except (ValueError, TypeError):
        params = GenerationParams()  # a hand-edited or older row: fall back to the defaults
    return Conversation(row["id"], row["title"], row["system_prompt"], params, row["created"], row["updated"])


def _message(row: sqlite3.Row) -> StoredMessage:
    metrics = AnswerMetrics.from_dict(json.loads(row["metrics"])) if row["metrics"] else None
    provenance = None
    if row["base"] is not None:
        provenance = Provenance(
            row["model"] or row["base"],
            row["base"],
            row["adapter"],
            row["run_id"],
            row["checkpoint"],
            bool(row["merged"]),
        )
    return StoredMessage(
        row["id"],
        row["conversation_id"],
        row["role"],
        row["content"],
        row["status"],
        row["model"],
        metrics,
        row["note"],
        row["created"],
        provenance,
    )


def prompt_messages(conversation: Conversation, messages: list[StoredMessage]) -> list[dict[str, str]]:
    """What the model sees: the system prompt, then every question and every answer with text
    (stopped answers included, failed empty ones left out)."""
    result = [{"role": "system", "content": conversation.system_prompt}] if conversation.system_prompt else []
    result += [{"role": m.role, "content": m.content} for m in messages if m.role == "user" or m.content]
    return result
