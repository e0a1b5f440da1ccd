"""The engine's wire format: one JSON object per line over the child's stdin/stdout.

Requests (`op`): load {options}, generate {messages, params, rows?}, stop, stats, shutdown.
Events (`ev`): ready {pid}, progress {stage}, loaded {report}, warning {message},
start {tokens_in}, token {text, n, made_at, row?} (made_at: when the engine's newest token came
out of the model, on `time.monotonic`'s clock), done {stopped, tokens_in, tokens_out, rows, memory},
stats {memory}, error {kind, message, during}, bye.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

OPS = ("load", "generate", "stop", "stats", "shutdown")
EVENTS = ("ready", "progress", "loaded", "warning", "start", "token", "done", "stats", "error", "bye")


class ProtocolError(ValueError):
    """A line that is not one JSON object with a known `op` or `ev`."""


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def decode(line: bytes | str, key: str) -> dict[str, Any]:
    """Parse one line; `key` is "op" (engine side) or "ev" (client side)."""
    try:
        message = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"not JSON: {line[:200]!r}") from exc
    if not isinstance(message, dict):
        raise ProtocolError(f"not a JSON object: {line[:200]!r}")
    known = OPS if key == "op" else EVENTS
    if message.get(key) not in known:
        raise ProtocolError(f"unknown {key} {message.get(key)!r}")
    return message


def known_fields(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The items of `data` that dataclass `cls` has fields for (a newer peer may send more)."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}
