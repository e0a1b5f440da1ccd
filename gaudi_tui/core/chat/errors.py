"""Turning engine failures into messages that say what happened, why, and what to do."""

from __future__ import annotations

import signal
from dataclasses import dataclass

GAUDI_OOM_MARK = "PT_DEVMEM Allocation failed"


class ChatError(Exception):
    """A failure the user can act on. `kind` is stable (tests and the UI key on it)."""

    def __init__(self, kind: str, message: str, partial: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.partial = partial
        """The answer text received before the failure (kept, never thrown away)."""


class EngineDied(ChatError):
    """The engine process ended (crash, kill, out of memory)."""

    def __init__(self, message: str, partial: str = "") -> None:
        super().__init__("engine_died", message, partial)


@dataclass(frozen=True)
class Failure:
    kind: str
    message: str


def explain(exc: BaseException, during: str) -> Failure:
    """Classify an exception raised in the engine while `during` ("load" or "generate")."""
    if isinstance(exc, ChatError):
        return Failure(exc.kind, exc.message)
    text = f"{type(exc).__name__}: {exc}"
    oom = _out_of_memory(exc, text)
    if oom:
        advice = _OOM_ADVICE.get(during, "")
        return Failure("oom", f"{oom} while {_doing(during)} ({first_line(text)}).{advice}")
    return Failure("failed", f"{first_line(text)} while {_doing(during)}.")


_OOM_ADVICE = {
    "load": " Try 4-bit NF4 quantization, a smaller model, or free the card (the Devices screen shows who holds it).",
    "generate": " The model stays loaded: lower max_new_tokens, start a new conversation (shorter prompt), or reload with 4-bit NF4.",
}


def _out_of_memory(exc: BaseException, text: str) -> str | None:
    if GAUDI_OOM_MARK in text:
        return "Out of Gaudi device memory"
    if type(exc).__name__ == "OutOfMemoryError" or "CUDA out of memory" in text:
        return "Out of CUDA memory"
    if isinstance(exc, MemoryError) or "can't allocate memory" in text or "DefaultCPUAllocator" in text:
        return "Out of host memory"
    return None


def _doing(during: str) -> str:
    return {"load": "loading the model", "generate": "generating"}.get(during, during)


def first_line(text: str, limit: int = 300) -> str:
    """The first line of an error text, shortened to `limit` characters."""
    line = text.strip().splitlines()[0] if text.strip() else text
    return line if len(line) <= limit else line[: limit - 1] + "…"


def death_message(returncode: int | None, log_tail: str) -> str:
    """Why the engine process ended, for the pane."""
    if returncode is None:
        why = "The model engine stopped answering"
    elif returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        why = f"The model engine was killed by {name}"
        if -returncode == signal.SIGKILL:
            why += " (the kernel's out-of-memory killer, or someone ran kill -9)"
    else:
        why = f"The model engine exited with code {returncode}"
    tail = f" Last log line: {log_tail}" if log_tail else ""
    return f"{why}.{tail} Your conversation is saved; reload the model (l) to continue."
