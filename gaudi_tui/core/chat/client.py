"""The parent's side of the engine: start the child, send requests, read its events.

A reader thread timestamps each event line as it arrives, so time to first token is measured where
the pane receives it (after the model, the pipe and the JSON); the decode rate is taken from the
engine's own stamps of when its tokens were made (`made_at`, the same monotonic clock). Calls that
wait (`load`, `generate`, `stats`) run one at a time from a worker thread; `stop` may be called
from any thread. The engine's stderr (and native output) goes to a log file, never the terminal.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gaudi_tui.core import paths, processes
from gaudi_tui.core.chat.errors import ChatError, EngineDied, death_message
from gaudi_tui.core.chat.metrics import AnswerMetrics, LoadReport, MemoryReport, decode_rate
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from gaudi_tui.core.chat.protocol import ProtocolError, decode, encode

LOG_NAME = "chat-engine.log"
LOG_ROTATE_BYTES = 2_000_000
POLL_S = 0.05
SHUTDOWN_WAIT_S = 3.0
ENGINE_EXIT_WAIT_S = 10.0
STOP_WAIT_S = 10.0
"""After a stop is sent, how long an answer waits for the engine to end it; then the engine is ended
(it would hold the card) and the answer fails saying so."""
"""After the engine closes its output, how long it may take to exit before it is ended."""


class Cancel(Protocol):
    """What asks a call to give up: a `threading.Event`, or anything else that can say it is set."""

    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class Answer:
    text: str
    stopped: bool
    metrics: AnswerMetrics
    warnings: tuple[str, ...] = field(default_factory=tuple)


def made_at(event: Mapping[str, Any], arrived: float) -> float:
    """When a token event's newest token came out of the model (the engine's stamp), else when the
    event arrived: the decode rate is the model's, not when a reader busy drawing got to it."""
    stamp = event.get("made_at")
    return float(stamp) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) else arrived


def engine_log_path() -> Path:
    return paths.log_dir() / LOG_NAME


class EngineClient:
    """One engine child process. `on_exit(message)` is called (from the reader thread) if the
    child ends without being asked to."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        on_exit: Callable[[str], None] | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.extra_env = dict(env or {})
        self.on_exit = on_exit
        self.log_path = log_path or engine_log_path()
        self.report: LoadReport | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._events: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self._send_lock = threading.Lock()
        self._busy = threading.Lock()
        self._stop_at: float | None = None
        self._closing = False
        self._log_offset = 0
        self._exit: tuple[float, dict[str, Any]] | None = None

    # ---- process ---------------------------------------------------------------------------
    def start(self) -> None:
        if self._proc is not None:
            raise RuntimeError("engine already started")
        self._rotate_log()
        env = dict(os.environ)
        env.update(self.extra_env)
        with open(self.log_path, "ab") as log:
            self._log_offset = log.tell()
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "gaudi_tui.core.chat.engine"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                close_fds=True,
            )
        threading.Thread(target=self._read_events, name="engine-events", daemon=True).start()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _rotate_log(self) -> None:
        if self.log_path.exists() and self.log_path.stat().st_size > LOG_ROTATE_BYTES:
            self.log_path.replace(self.log_path.with_suffix(".log.1"))

    def _read_events(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        for raw in proc.stdout:
            now = time.monotonic()  # the engine's own stamps (made_at) are on this clock too
            try:
                self._events.put((now, decode(raw, "ev")))
            except ProtocolError:
                continue  # nothing but protocol lines reach this pipe; ignore anything else
        # Its stdout closed: it is ending. A limit on the wait, so this thread never hangs on it.
        ending = processes.end_child(proc, "the chat engine", first_wait=ENGINE_EXIT_WAIT_S)
        returncode = proc.returncode if proc.returncode is not None else -9
        message = death_message(returncode, self.log_tail())
        if ending == "abandoned":
            message += "\n" + processes.abandoned_message("the chat engine", proc.pid)
        self._exit = (time.monotonic(), {"ev": "exit", "returncode": returncode, "message": message})
        self._events.put(self._exit)
        if not self._closing and self.on_exit is not None:
            self.on_exit(message)

    def log_tail(self) -> str:
        """The last meaningful line this engine wrote to its log (usually the exception)."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_offset)
                lines = log.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        for line in reversed(lines):
            text = line.strip()
            if text and not text.startswith("==="):
                return text[:300]
        return ""

    def _send(self, message: dict[str, Any]) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise ChatError("not_started", "The model engine is not running: load a model first.")
        with self._send_lock:
            try:
                proc.stdin.write(encode(message))
                proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass  # the reader thread reports the exit with its reason

    def _next(self, timeout: float | None = None) -> tuple[float, dict[str, Any]] | None:
        try:
            return self._events.get(timeout=timeout)
        except queue.Empty:
            return self._exit  # once the engine is gone, every wait ends with its exit

    # ---- requests --------------------------------------------------------------------------
    def load(
        self,
        options: LoadOptions,
        on_progress: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> LoadReport:
        """Load the model; raises ChatError with the engine's explanation. Cancelling kills the
        engine (a half-loaded model cannot be interrupted any other way)."""
        with self._busy:
            self._send({"op": "load", "options": options.to_dict()})
            while True:
                if cancel is not None and cancel.is_set():
                    self.kill()
                    raise ChatError("cancelled", "Loading was cancelled.")
                item = self._next(POLL_S)
                if item is None:
                    continue
                ev = item[1]
                if ev["ev"] == "progress" and on_progress is not None:
                    on_progress(str(ev.get("stage", "")))
                elif ev["ev"] == "loaded":
                    self.report = LoadReport.from_dict(ev["report"])
                    return self.report
                elif ev["ev"] == "error":
                    raise ChatError(ev.get("kind", "failed"), ev.get("message", "loading failed"))
                elif ev["ev"] == "exit":
                    raise EngineDied(ev["message"])

    def generate(
        self,
        messages: Sequence[Mapping[str, str]],
        params: GenerationParams,
        on_text: Callable[[str], None] | None = None,
        cancel: Cancel | None = None,
        on_warning: Callable[[str], None] | None = None,
    ) -> Answer:
        """Stream one answer. Setting `cancel` (or calling `stop()`) ends it after the current
        token; the partial answer is returned with `stopped=True` and the model stays loaded."""
        with self._busy:
            self._stop_at = None
            sent = time.monotonic()
            self._send(
                {"op": "generate", "messages": [dict(m) for m in messages], "params": params.to_dict()}
            )
            parts: list[str] = []
            warnings: list[str] = []
            first_at = first_made = last_made = None
            stop_sent = False
            while True:
                if cancel is not None and cancel.is_set() and not stop_sent:
                    self.stop()
                    stop_sent = True
                stop_at = self._stop_at
                if stop_at is not None and time.monotonic() - stop_at > STOP_WAIT_S:
                    self.kill()
                    raise EngineDied(
                        f"the engine did not stop within {STOP_WAIT_S:g} s of Esc and was ended to free "
                        "the card; l loads the model again",
                        "".join(parts),
                    )
                item = self._next(POLL_S)
                if item is None:
                    continue
                at, ev = item
                kind = ev["ev"]
                if kind == "token":
                    first_at = at if first_at is None else first_at
                    last_made = made_at(ev, at)
                    first_made = last_made if first_made is None else first_made
                    if ev["text"]:
                        parts.append(ev["text"])
                        if on_text is not None:
                            on_text(ev["text"])
                elif kind == "warning":
                    warnings.append(ev["message"])
                    if on_warning is not None:
                        on_warning(ev["message"])
                elif kind == "done":
                    metrics = AnswerMetrics(
                        ttft_s=None if first_at is None else first_at - sent,
                        decode_tps=decode_rate(int(ev["tokens_out"]), first_made, last_made),
                        tokens_in=int(ev["tokens_in"]),
                        tokens_out=int(ev["tokens_out"]),
                        total_s=at - sent,
                        stopped=bool(ev["stopped"]),
                        memory=MemoryReport.from_dict(ev.get("memory")),
                        new_graphs=ev.get("new_graphs"),
                    )
                    return Answer("".join(parts), metrics.stopped, metrics, tuple(warnings))
                elif kind == "error":
                    raise ChatError(
                        ev.get("kind", "failed"), ev.get("message", "generation failed"), "".join(parts)
                    )
                elif kind == "exit":
                    raise EngineDied(ev["message"], "".join(parts))

    def generate_rows(
        self,
        messages: Sequence[Mapping[str, str]],
        params: GenerationParams,
        rows: Sequence[int],
        on_text: Callable[[int, str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> list[Answer]:
        """One answer from each of the engine's models in `rows` (`LoadReport.rows`), generated
        together; `on_text(i, text)` gets the text of `rows[i]`. Each answer has its own metrics:
        its first token's arrival, its tokens' making."""
        with self._busy:
            sent = time.monotonic()
            self._send(
                {
                    "op": "generate",
                    "messages": [dict(m) for m in messages],
                    "params": params.to_dict(),
                    "rows": list(rows),
                }
            )
            index = {row: i for i, row in enumerate(rows)}
            parts: list[list[str]] = [[] for _ in rows]
            first: list[float | None] = [None] * len(rows)
            last: list[float | None] = [None] * len(rows)
            """When each row's first token arrived, and when its first and newest tokens were made."""
            first_made: list[float | None] = [None] * len(rows)
            warnings: list[str] = []
            stop_sent = False
            while True:
                if cancel is not None and cancel.is_set() and not stop_sent:
                    self.stop()
                    stop_sent = True
                item = self._next(POLL_S)
                if item is None:
                    continue
                at, ev = item
                kind = ev["ev"]
                if kind == "token":
                    i = index.get(int(ev.get("row", rows[0])), 0)
                    first[i] = at if first[i] is None else first[i]
                    last[i] = made_at(ev, at)
                    first_made[i] = last[i] if first_made[i] is None else first_made[i]
                    if ev["text"]:
                        parts[i].append(ev["text"])
                        if on_text is not None:
                            on_text(i, ev["text"])
                elif kind == "warning":
                    warnings.append(ev["message"])
                elif kind == "done":
                    counts = {int(r["row"]): int(r["tokens_out"]) for r in ev.get("rows") or ()}
                    memory = MemoryReport.from_dict(ev.get("memory"))
                    answers = []
                    for i, row in enumerate(rows):
                        tokens_out = counts.get(row, int(ev["tokens_out"]))
                        first_at = first[i]
                        metrics = AnswerMetrics(
                            ttft_s=None if first_at is None else first_at - sent,
                            decode_tps=decode_rate(tokens_out, first_made[i], last[i]),
                            tokens_in=int(ev["tokens_in"]),
                            tokens_out=tokens_out,
                            total_s=(last[i] or at) - sent,
                            stopped=bool(ev["stopped"]),
                            memory=memory,
                            new_graphs=ev.get("new_graphs"),
                        )
                        answers.append(Answer("".join(parts[i]), metrics.stopped, metrics, tuple(warnings)))
                    return answers
                elif kind == "error":
                    raise ChatError(
                        ev.get("kind", "failed"), ev.get("message", "generation failed"), "".join(parts[0])
                    )
                elif kind == "exit":
                    raise EngineDied(ev["message"], "".join(parts[0]))

    def stop(self) -> None:
        """Ask the engine to end the current answer (safe from any thread; no-op when idle)."""
        if self.alive:
            if self._stop_at is None:
                self._stop_at = time.monotonic()
            self._send({"op": "stop"})

    def stats(self, timeout: float = 5.0) -> MemoryReport | None:
        """Current device memory of the engine, or None when it is busy or gone."""
        if not self._busy.acquire(timeout=timeout):
            return None
        try:
            self._send({"op": "stats"})
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                item = self._next(POLL_S)
                if item is None:
                    continue
                if item[1]["ev"] == "stats":
                    return MemoryReport.from_dict(item[1].get("memory"))
                if item[1]["ev"] == "exit":
                    raise EngineDied(item[1]["message"])
            return None
        finally:
            self._busy.release()

    def shutdown(self, timeout: float = SHUTDOWN_WAIT_S) -> None:
        """End the engine and free its card: ask, then terminate, then kill."""
        proc = self._proc
        if proc is None:
            return
        self._closing = True
        if proc.poll() is None:
            self._send({"op": "shutdown"})
            processes.end_child(proc, "the chat engine", first_wait=timeout)
        self._close_pipes()

    def kill(self) -> None:
        """End the engine at once (cancelled load, app exit)."""
        proc = self._proc
        if proc is None:
            return
        self._closing = True
        processes.end_child(proc, "the chat engine", term_wait=None)
        self._close_pipes()

    def _close_pipes(self) -> None:
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
