"""torch.compile's compiles and recompiles, seen inside the job's process (imports torch).

Three of torch's surfaces, none patched:

- dynamo's compile callbacks (`torch._dynamo.callback.callback_handler`, the handler behind
  `on_compile_start`/`on_compile_end`): each start and end with its compile id `"<frame>/<attempt>"`,
  so a compile's time and which frame it belongs to;
- the `recompiles` log artifact (`torch._logging.set_logs(recompiles=True)`, the same switch as
  `TORCH_LOGS=recompiles`): one record per recompile naming the guard that failed, read by a
  `logging.Handler` on the `torch._dynamo` logger;
- the warning dynamo logs on `torch._dynamo.convert_frame` when a frame hits
  `config.recompile_limit`: from then on the frame runs uncompiled.

Each compile becomes one `compile` event (`compiles.EVENT`), queued here and written by the caller
(the Trainer callback at each step's end) through its own sink, so every target carries it the way
metrics go. A torch without the callbacks gives one `what: "unavailable"` event saying so.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from gaudi_tui.core.insight.compiles import EVENT, limit_hit, recompile_reason

DYNAMO_LOGGER = "torch._dynamo"
RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"


class _Records(logging.Handler):
    def __init__(self, watch: CompileWatch) -> None:
        super().__init__(logging.DEBUG)
        self.watch = watch

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.watch.record(record.getMessage())
        except Exception:  # noqa: BLE001 - a log record must never stop training
            pass


class CompileWatch:
    """`step`: the step in progress (the caller sets it; None in a loop with no steps)."""

    def __init__(self) -> None:
        self.step: int | None = None
        self._events: list[dict[str, object]] = []
        self._lock = threading.Lock()
        self._started: dict[str, float] = {}
        self._reasons: dict[str, tuple[str, str]] = {}
        """A frame's pending recompile: (function, guard), logged just before its compile starts."""
        self._handler = _Records(self)
        self._handler_logger: logging.Logger | None = None
        self._callbacks: Any = None

    def start(self) -> None:
        """Register the callbacks and the log handler (once)."""
        if self._callbacks is not None or self._handler_logger is not None:
            return
        try:
            import torch
            from torch._dynamo.callback import callback_handler
        except ImportError as exc:
            self._queue({"what": "unavailable", "reason": f"this torch has no compile callbacks ({exc})"})
            return
        callback_handler.register_start_callback(self._on_start)
        callback_handler.register_end_callback(self._on_end)
        self._callbacks = callback_handler
        if not logging.getLogger(RECOMPILES_LOGGER).isEnabledFor(logging.DEBUG):
            torch._logging.set_logs(recompiles=True)
        self._handler_logger = logging.getLogger(DYNAMO_LOGGER)
        self._handler_logger.addHandler(self._handler)

    def stop(self) -> None:
        if self._callbacks is not None:
            self._callbacks.remove_start_callback(self._on_start)
            self._callbacks.remove_end_callback(self._on_end)
            self._callbacks = None
        if self._handler_logger is not None:
            self._handler_logger.removeHandler(self._handler)
            self._handler_logger = None

    def drain(self) -> list[dict[str, object]]:
        """The events queued since the last drain, oldest first. Nothing queued (most steps) is
        answered without the lock: an event queued meanwhile is drained at the next call."""
        if not self._events:
            return []
        with self._lock:
            events, self._events = self._events, []
        return events

    def _queue(self, event: dict[str, object]) -> None:
        with self._lock:
            self._events.append({"event": EVENT, "time": time.time(), "step": self.step, **event})

    @staticmethod
    def _dynamo(args: Any) -> bool:
        trigger = getattr(args, "callback_trigger", None)
        return getattr(trigger, "name", "DYNAMO") == "DYNAMO"

    def _on_start(self, args: Any) -> None:
        if self._dynamo(args):
            self._started[str(args.compile_id)] = time.perf_counter()

    def _on_end(self, args: Any) -> None:
        compile_id = str(args.compile_id)
        began = self._started.pop(compile_id, None)
        if not self._dynamo(args) or began is None:
            return
        frame, _, attempt = compile_id.partition("/")
        event: dict[str, object] = {
            "what": "compile",
            "frame": frame,
            "compile_id": compile_id,
            "seconds": time.perf_counter() - began,
            "source": "torch",
        }
        pending = self._reasons.pop(frame, None)
        if attempt not in ("", "0") and pending is not None:
            event["function"], event["reason"] = pending
        elif attempt not in ("", "0"):
            event["reason"] = "not available (no recompiles log record)"
        self._queue(event)

    def record(self, message: str) -> None:
        """One record of the `torch._dynamo` loggers."""
        if (parsed := recompile_reason(message)) is not None and message.startswith("Recompiling"):
            frame, function, reason = parsed
            self._reasons[frame] = (function, reason)
        elif (limit := limit_hit(message)) is not None:
            self._queue({"what": "limit", "source": "torch", **limit})
