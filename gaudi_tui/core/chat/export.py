"""Export a conversation as Markdown (to read) and JSON (to process), into the data folder."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gaudi_tui.core import paths
from gaudi_tui.core.chat.store import Conversation, StoredMessage

STATUS_NOTE = {"partial": "stopped before the end", "error": "failed"}


def to_markdown(conversation: Conversation, messages: list[StoredMessage]) -> str:
    lines = [f"# {conversation.title}", ""]
    if conversation.system_prompt:
        lines += [f"> System prompt: {conversation.system_prompt}", ""]
    for message in messages:
        who = "You" if message.role == "user" else (message.model or "Assistant")
        lines += [f"**{who}:**", "", message.content or "_(no text)_", ""]
        details = []
        if message.status in STATUS_NOTE:
            details.append(STATUS_NOTE[message.status])
        if message.provenance is not None and message.provenance.summary() != message.model:
            details.append(f"answered by {message.provenance.summary()}")
        if message.metrics:
            details.append(message.metrics.summary())
        if message.note:
            details.append(message.note)
        if details:
            lines += [f"_{' · '.join(details)}_", ""]
    return "\n".join(lines).rstrip() + "\n"


def to_json(conversation: Conversation, messages: list[StoredMessage]) -> dict[str, Any]:
    return {
        "title": conversation.title,
        "system_prompt": conversation.system_prompt,
        "params": conversation.params.to_dict(),
        "created": conversation.created,
        "updated": conversation.updated,
        "messages": [
            {
                "role": m.role,
                "content": m.content,
                "status": m.status,
                "model": m.model,
                "metrics": m.metrics.to_dict() if m.metrics else None,
                "note": m.note,
                "created": m.created,
                "answered_by": m.provenance.to_dict() if m.provenance else None,
            }
            for m in messages
        ],
    }


def export_dir() -> Path:
    path = paths.data_dir() / "exports"
    path.mkdir(parents=True, exist_ok=True)
    return path


def export(
    conversation: Conversation, messages: list[StoredMessage], folder: Path | None = None
) -> list[Path]:
    """Write `<slug>-<id>.md` and `.json`; returns both paths."""
    folder = folder or export_dir()
    stem = f"{slug(conversation.title)}-{conversation.id}"
    markdown = folder / f"{stem}.md"
    markdown.write_text(to_markdown(conversation, messages), encoding="utf-8")
    data = folder / f"{stem}.json"
    data.write_text(
        json.dumps(to_json(conversation, messages), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return [markdown, data]


def slug(title: str) -> str:
    text = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()
    return text[:40] or "chat"
