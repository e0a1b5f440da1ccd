"""The chat engine child: `python -m gaudi_tui.core.chat.engine`. It owns the model (and the card).

It speaks JSON lines (see protocol.py) on a private copy of fd 1; fd 1 and 2 themselves go to the
log file the parent opened, so native runtime output never reaches the TUI's terminal or the
protocol. A reader thread takes requests from stdin: `stop` sets an event the generation loop
checks every token; everything else is queued for the main thread. When stdin closes (the parent
went away, even by SIGKILL) the engine stops generating and exits: no orphans.
"""

from __future__ import annotations

import importlib.util
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

from gaudi_tui.core.chat.errors import ChatError, explain
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from gaudi_tui.core.chat.protocol import ProtocolError, decode, encode
from gaudi_tui.core.insight.runtime import RuntimeMetrics, compile_figures, file_from_env

TOKEN_BATCH_S = 0.05
"""Tokens generated within this long after the last token event go out as one event, detokenised
once: decoding a paragraph costs 14–49 µs a token when done per token, 3–5 µs when done once per
5–12 tokens (bench/chat_detokenise.py).
The pane draws at most every 0.2 s, so 50 ms batches are invisible; the first token goes alone."""


class Writer:
    """Serialises event lines onto the protocol stream; a closed pipe means the parent is gone."""

    def __init__(self, stream: BinaryIO, gone: threading.Event) -> None:
        self.stream = stream
        self.gone = gone
        self.lock = threading.Lock()

    def send(self, ev: str, **fields: Any) -> None:
        line = encode({"ev": ev, **fields})
        with self.lock:
            try:
                self.stream.write(line)
            except (BrokenPipeError, OSError):
                self.gone.set()


class Engine:
    def __init__(self, stdin: BinaryIO, writer: Writer, stop: threading.Event) -> None:
        self.stdin = stdin
        self.out = writer
        self.stop = stop
        self.requests: queue.Queue[dict[str, Any]] = queue.Queue()
        self.loaded: Any = None
        self.accelerator_kind = "cpu"
        self.compiles: RuntimeMetrics | None = None

    def run(self) -> int:
        self.out.send("ready", pid=os.getpid())
        threading.Thread(target=self._read_requests, name="engine-requests", daemon=True).start()
        while True:
            request = self.requests.get()
            op = request["op"]
            if op == "shutdown":
                self.out.send("bye")
                return 0
            try:
                getattr(self, f"_op_{op}")(request)
            except Exception as exc:  # noqa: BLE001 - every failure becomes an error event; the engine lives on
                failure = explain(exc, op)
                print(f"engine: {op} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                self.out.send("error", kind=failure.kind, message=failure.message, during=op)

    def _read_requests(self) -> None:
        for raw in self.stdin:
            try:
                request = decode(raw, "op")
            except ProtocolError as exc:
                self.out.send("error", kind="protocol", message=str(exc), during="read")
                continue
            if request["op"] in ("stop", "shutdown"):
                self.stop.set()  # a shutdown also ends the answer in progress
            if request["op"] == "stop":
                continue
            if request["op"] == "generate":
                self.stop.clear()
            self.requests.put(request)
        self.stop.set()
        self.requests.put({"op": "shutdown"})

    def _op_load(self, request: dict[str, Any]) -> None:
        from gaudi_tui.core.chat.engine import loader

        options = LoadOptions.from_dict(request.get("options") or {})
        loader.unload(self.loaded)
        self.loaded = None
        loader.resolve(options)  # a wrong path, job, base or adapter fails now, before torch is imported
        habana = importlib.util.find_spec("habana_frameworks") is not None
        os.environ.update(loader.engine_env(options, habana))
        self.out.send("progress", stage="importing torch and transformers")
        accelerator = loader.detect_accelerator()
        self.accelerator_kind = accelerator.kind
        self.loaded = loader.load(options, accelerator, lambda stage: self.out.send("progress", stage=stage))
        self.out.send("progress", stage="compiling and warming up" if options.compile else "warming up")
        from gaudi_tui.core.chat.engine import generation

        warmup_s = generation.warm_up(self.loaded)
        report = replace(
            self.loaded.report,
            warmup_s=round(warmup_s, 4),
            memory=loader.memory_report(accelerator.kind),
            warmup_graphs=self._graphs(),
        )
        self.loaded.report = report
        self.out.send("loaded", report=report.to_dict())

    def _op_generate(self, request: dict[str, Any]) -> None:
        if self.loaded is None:
            raise ChatError("not_loaded", "No model is loaded: load one first.")
        from gaudi_tui.core.chat.engine import generation, loader

        params = GenerationParams.from_dict(request.get("params") or {})
        messages = request.get("messages") or []
        rows = [int(r) for r in request.get("rows") or [0]]
        if not rows or any(not 0 <= r < len(self.loaded.rows) for r in rows):
            raise ChatError("bad_request", f"rows {rows} name models this engine does not serve")

        def on_start(tokens_in: int, warnings: list[str]) -> None:
            for warning in warnings:
                self.out.send("warning", message=warning)
            self.out.send("start", tokens_in=tokens_in)

        tagged = len(rows) > 1  # token events say which row (model) they belong to
        sent_at = [[0.0, 0] for _ in rows]  # per row: when its last token event went out, and its count

        def flush(i: int, n: int) -> None:
            self.out.send(
                "token",
                text=streamers[i].take(),
                n=n,
                made_at=streamers[i].made_at,
                **({"row": rows[i]} if tagged else {}),
            )
            sent_at[i][:] = [time.perf_counter(), n]

        def on_token(i: int, n: int) -> None:
            """The first token goes out at once (time to first token); later tokens are batched
            for TOKEN_BATCH_S, so a fast model pays neither one pipe write nor one detokenising
            per token."""
            if sent_at[i][1] == 0 or time.perf_counter() - sent_at[i][0] >= TOKEN_BATCH_S:
                flush(i, n)

        def on_row_token(i: int) -> Callable[[int], None]:
            return lambda n: on_token(i, n)

        tokenizer = self.loaded.tokenizer
        streamers = [generation.TokenStreamer(tokenizer, on_row_token(i)) for i in range(len(rows))]
        streamer = (
            generation.RowStreamer(streamers, generation.end_tokens(self.loaded)) if tagged else streamers[0]
        )
        started = time.perf_counter()
        graphs_before = self._graphs()
        counts = generation.generate(self.loaded, messages, params, self.stop, on_start, streamer, rows)
        for i, row_streamer in enumerate(streamers):
            tail = row_streamer.take(final=True)
            if tail or row_streamer.count > sent_at[i][1]:
                self.out.send(
                    "token",
                    text=tail,
                    n=row_streamer.count,
                    made_at=row_streamer.made_at,
                    **({"row": rows[i]} if tagged else {}),
                )
        self.out.send(
            "done",
            stopped=counts.stopped,
            tokens_in=counts.tokens_in,
            tokens_out=counts.tokens_out,
            rows=[{"row": r, "tokens_out": s.count} for r, s in zip(rows, streamers, strict=True)],
            seconds=round(time.perf_counter() - started, 4),
            memory=loader.memory_report(self.loaded.accelerator.kind).to_dict(),
            new_graphs=_new(graphs_before, self._graphs()),
        )

    def _graphs(self) -> int | None:
        """Graphs the runtime compiled so far in this engine (its metrics file; None without one)."""
        path = file_from_env(os.environ)
        if not path:
            return None
        if self.compiles is None or self.compiles.base != Path(path):
            self.compiles = RuntimeMetrics(Path(path))
        figures = compile_figures(self.compiles)
        graphs = figures.get("graph_compilations")
        return graphs if isinstance(graphs, int) else (0 if self.compiles.found else None)

    def _op_stats(self, request: dict[str, Any]) -> None:
        from gaudi_tui.core.chat.engine import loader

        memory = loader.memory_report(self.accelerator_kind)
        self.out.send("stats", loaded=self.loaded is not None, memory=memory.to_dict())


def _new(before: int | None, after: int | None) -> int | None:
    return after - (before or 0) if after is not None else None


def protocol_stream() -> BinaryIO:
    """Keep a private copy of fd 1 for the protocol and point fd 1 (and sys.stdout) at the log."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "wb", buffering=0)


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop us
    stream = protocol_stream()
    print(f"=== chat engine pid {os.getpid()} started", file=sys.stderr, flush=True)
    stop = threading.Event()
    engine = Engine(sys.stdin.buffer, Writer(stream, stop), stop)
    code = engine.run()
    sys.stderr.flush()
    # Skip interpreter teardown: the reader thread is blocked on stdin, and a model's native
    # runtime may not like being finalised; the process image goes away either way.
    os._exit(code)


if __name__ == "__main__":
    main()
