"""Chat with any OpenAI-compatible server (vLLM, `transformers serve`, TGI...): the engine client's
shape (core/chat/client.py), so a ChatSession, a Comparison and `gaudi-tui chat` use either.

`load` checks the server and the model on `/v1/models`; `generate` streams `/v1/chat/completions`
(server-sent events) and measures TTFT and decode rate where the chunks arrive, as the engine's
client does; `stop` closes the stream (the server ends that request and goes on serving). The API
key is read from the environment variable the options name, at each request: never stored, shown
or put in an error text, and sent only to the server's own origin. Every request goes through the
bounded client (`core/untrusted/http.py`, `sse.py`): a deadline for the whole exchange, caps on the
model list, an error's body, each event and the whole stream, each chunk read by the untrusted JSON
reader; a stream that goes on past the token bound asked for is ended with a note.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.client import HTTPConnection
from typing import Any

from gaudi_tui.core.chat.client import Answer, Cancel
from gaudi_tui.core.chat.errors import ChatError, first_line
from gaudi_tui.core.chat.metrics import AnswerMetrics, LoadReport, decode_rate
from gaudi_tui.core.chat.openai_api import (
    ENV_NAME,
    Endpoint,
    api_key,
    choose_model,
    detail,
    parse_json,
    parse_url,
    request_body,
)
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from gaudi_tui.core.chat.trained import Provenance
from gaudi_tui.core.untrusted import http, sse
from gaudi_tui.core.untrusted.data import Untrusted, loads

CHECK_TIMEOUT_S = 10.0
"""How long `/v1/models` may take to answer."""
READ_TIMEOUT_S = 300.0
"""How long the stream may stay silent (a first request on a server still compiling is slow)."""
STREAM_S = 3600.0
"""How long one whole answer may take, connect to last chunk."""
MAX_MODELS = 4 << 20
"""The most of a /v1/models answer read (a server listing hundreds of models sends a few hundred KB)."""
MAX_ERROR = 64 << 10
"""The most of a refusal's body read."""
EXTRA_CHUNKS = 16
"""Chunks of text past `max_new_tokens` before a stream that ignores the bound is ended (a server
may split a token's text, or count a few differently)."""
WATCH_S = 0.05
SERVED_HINT = "`gaudi-tui jobs` lists the panel's served jobs"


@dataclass
class _Stream:
    """What one answer's stream has brought so far."""

    sent: float
    parts: list[str] = field(default_factory=list)
    chunks: int = 0
    first_at: float | None = None
    last_at: float | None = None
    usage: Mapping[str, Any] | None = None
    finished: bool = False

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def answer(self, stopped: bool) -> Answer:
        usage = self.usage or {}
        tokens_out = _count(usage.get("completion_tokens"), self.chunks)
        metrics = AnswerMetrics(
            ttft_s=None if self.first_at is None else self.first_at - self.sent,
            decode_tps=decode_rate(tokens_out, self.first_at, self.last_at),
            tokens_in=_count(usage.get("prompt_tokens"), 0),
            tokens_out=tokens_out,
            total_s=time.perf_counter() - self.sent,
            stopped=stopped,
        )
        return Answer(self.text, stopped, metrics)


def _count(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


class EndpointClient:
    """One OpenAI-compatible server and the model asked there."""

    def __init__(self, url: str, api_key_env: str = "") -> None:
        self.given = url.strip()
        self.api_key_env = api_key_env
        self.model: str | None = None
        self.report: LoadReport | None = None
        self._busy = threading.Lock()
        self._conn: HTTPConnection | None = None
        self._stopping = False

    @functools.cached_property
    def endpoint(self) -> Endpoint:
        """Raises ChatError for a URL that is not one (at `load`, which reports it)."""
        return parse_url(self.given)

    @property
    def url(self) -> str:
        try:
            return self.endpoint.url
        except ChatError:
            return self.given

    @property
    def pid(self) -> int | None:
        """No process of the panel's answers (the server's own is not the panel's to end)."""
        return None

    def start(self) -> None:
        """Nothing to start: the server runs on its own."""

    # ---- requests --------------------------------------------------------------------------
    def load(
        self,
        options: LoadOptions,
        on_progress: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> LoadReport:
        """Check that the server answers and serves the model; raises ChatError saying what to do."""
        started = time.perf_counter()
        self.endpoint  # noqa: B018 (a bad URL fails here, with its reason)
        if on_progress is not None:
            on_progress(f"asking {self.url} for its models")
        status, data = self._request("GET", "/v1/models", None, CHECK_TIMEOUT_S)
        if status == 404:
            raise ChatError(
                "not_found",
                f"{self.url} has no /v1/models: give an OpenAI-compatible server's base URL (http://host:port).",
            )
        if status != 200:
            raise self._refused(status, data, "the model list")
        entries = data.get("data") if isinstance(data, dict) else None
        served = [str(e["id"]) for e in entries or () if isinstance(e, dict) and isinstance(e.get("id"), str)]
        model = self.model = choose_model(self.url, served, options.model.strip())
        meta = next(e for e in entries or () if isinstance(e, dict) and e.get("id") == model)
        label = f"{model} @ {self.url}"
        context = meta.get("max_model_len")
        self.report = LoadReport(
            label=label,
            source=self.url,
            model_type="endpoint",
            parameters=0,
            dtype="OpenAI API",
            device="endpoint",
            quantization="none",
            compile_backend=None,
            chat_template=True,
            context_length=context if isinstance(context, int) else None,
            accelerator="endpoint",
            accelerator_reason="",
            load_s=time.perf_counter() - started,
            warmup_s=0.0,
            rows=(Provenance(label, model),),
        )
        return self.report

    def generate(
        self,
        messages: Sequence[Mapping[str, str]],
        params: GenerationParams,
        on_text: Callable[[str], None] | None = None,
        cancel: Cancel | None = None,
        on_warning: Callable[[str], None] | None = None,
    ) -> Answer:
        """Stream one answer. `cancel` (or `stop()`) closes the stream; the partial answer comes back
        with `stopped=True`. A stream that ends before the answer did raises ChatError with the text
        received so far."""
        if self.model is None:
            raise ChatError("not_started", f"{self.url} is not checked yet: load it first.")
        body = json.dumps(request_body(self.model, messages, params)).encode("utf-8")
        with self._busy:
            self._stopping = False
            stream = _Stream(time.perf_counter())
            done = threading.Event()
            if cancel is not None:
                threading.Thread(target=self._watch, args=(cancel, done), daemon=True).start()
            try:
                return self._stream(body, stream, params.max_new_tokens, on_text, on_warning)
            except ChatError as exc:
                exc.partial = exc.partial or stream.text
                raise
            finally:
                done.set()
                conn, self._conn = self._conn, None
                if conn is not None:
                    conn.close()

    def _stream(
        self,
        body: bytes,
        stream: _Stream,
        max_tokens: int,
        on_text: Callable[[str], None] | None,
        on_warning: Callable[[str], None] | None,
    ) -> Answer:
        url = self._url("/v1/chat/completions")
        conn = self._conn = http.connection(http.Origin.of(url), READ_TIMEOUT_S, direct=True)
        try:
            response = http.begin(
                "POST", url, timeout=STREAM_S, body=body, headers=self._headers(),
                credential=self._credential(), idle=READ_TIMEOUT_S, conn=conn,
            )  # fmt: skip
        except http.HttpError as exc:
            if self._stopping:
                return stream.answer(stopped=True)
            raise self._unreachable(exc) from None
        with response:
            return self._read_stream(response, stream, max_tokens, on_text, on_warning)

    def _read_stream(
        self,
        response: http.Response,
        stream: _Stream,
        max_tokens: int,
        on_text: Callable[[str], None] | None,
        on_warning: Callable[[str], None] | None,
    ) -> Answer:
        if self._stopping:  # stopped while connecting, before the socket could be shut down
            return stream.answer(stopped=True)
        try:
            if response.status != 200:
                raise self._refused(response.status, parse_json(self._error_body(response)), "the answer")
            for event in sse.events(response):
                if self._stopping:
                    return stream.answer(stopped=True)
                if event.data.startswith("[DONE]"):
                    break
                chunk = self._chunk(event, stream)
                if chunk is not None:
                    self._add(chunk, stream, on_text)
                if stream.chunks > max_tokens + EXTRA_CHUNKS:
                    if on_warning is not None:
                        on_warning(
                            f"The server went on past the {max_tokens} tokens asked for: the answer was ended there."
                        )
                    return stream.answer(stopped=True)
        except http.HttpError as exc:
            if self._stopping:
                return stream.answer(stopped=True)
            raise self._lost(exc.reason, stream) from None
        if self._stopping:
            return stream.answer(stopped=True)
        if not stream.finished:
            raise self._lost(None, stream)
        return stream.answer(stopped=False)

    def _chunk(self, event: sse.Event, stream: _Stream) -> dict[str, Any] | None:
        """One event's chunk (None for one that is not an object); an error event or field, or a
        chunk the untrusted reader refuses, is a ChatError."""
        try:
            chunk = loads(event.data, what="a chunk of the answer") if event.data else None
        except Untrusted as exc:
            if event.event == "error":
                chunk = event.data[:240]
            else:
                raise ChatError(
                    "bad_answer", f"{self.url} sent {exc}: the answer was ended.", stream.text
                ) from None
        if event.event == "error" or (isinstance(chunk, dict) and chunk.get("error")):
            raise ChatError("server_error", f"{self.url} failed mid-answer: {detail(chunk)}", stream.text)
        return chunk if isinstance(chunk, dict) else None

    @staticmethod
    def _add(chunk: Mapping[str, Any], stream: _Stream, on_text: Callable[[str], None] | None) -> None:
        if isinstance(chunk.get("usage"), dict):
            stream.usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            text = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(text, str) and text:
                now = time.perf_counter()
                stream.first_at = now if stream.first_at is None else stream.first_at
                stream.last_at = now
                stream.chunks += 1
                stream.parts.append(text)
                if on_text is not None:
                    on_text(text)
            if choice.get("finish_reason"):
                stream.finished = True

    def _watch(self, cancel: Cancel, done: threading.Event) -> None:
        while not done.wait(WATCH_S):
            if cancel.is_set():
                self.stop()
                return

    def stop(self) -> None:
        """Close the stream of the answer in progress (safe from any thread; no-op when idle)."""
        self._stopping = True
        conn = self._conn
        if conn is not None:
            http.abort(conn)

    def shutdown(self, timeout: float = 0.0) -> None:
        """End an answer in progress; the server goes on serving."""
        if self._conn is not None:
            self.stop()

    kill = shutdown

    # ---- HTTP ------------------------------------------------------------------------------
    def _url(self, path: str) -> str:
        return self.endpoint.url + path

    def _credential(self) -> http.Credential | None:
        """The key, for this server's origin only."""
        key = api_key(self.api_key_env)
        return http.Credential.bearer(self.endpoint.url, key) if key else None

    @staticmethod
    def _headers() -> dict[str, str]:
        return {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def _request(self, method: str, path: str, body: bytes | None, timeout: float) -> tuple[int, Any]:
        try:
            with http.begin(
                method, self._url(path), timeout=timeout, body=body, headers=self._headers(),
                credential=self._credential(), direct=True,
            ) as response:  # fmt: skip
                if response.status != 200:
                    return response.status, parse_json(self._error_body(response))
                raw = response.read(MAX_MODELS)
        except http.HttpError as exc:
            raise self._unreachable(exc) from None
        try:
            return response.status, loads(raw, what="the model list")
        except Untrusted as exc:
            raise ChatError("bad_answer", f"{self.url} sent {exc} on {path}.") from None

    @staticmethod
    def _error_body(response: http.Response) -> bytes:
        """A refusal's body, or what fits of it (a refusal's reason is its first line or field)."""
        try:
            return response.read(MAX_ERROR)
        except http.HttpError:
            return b""

    def _unreachable(self, exc: http.HttpError) -> ChatError:
        why = exc.reason
        if "connection refused" in why.lower():
            why = "connection refused: is the server running, and listening on that port?"
        return ChatError("unreachable", f"Cannot reach {self.url}: {first_line(why)} ({SERVED_HINT}).")

    def _refused(self, status: int, data: Any, what: str) -> ChatError:
        reason = self._clean(detail(data))
        said = f": {reason}" if reason else ""
        if status in (401, 403):
            fix = (
                f"check the key in {self.api_key_env}"
                if self.api_key_env
                else "it wants an API key: name the environment variable holding it"
            )
            return ChatError("api_key", f"{self.url} refused the request ({status}{said}): {fix}.")
        if status == 404:
            return ChatError(
                "model", f"{self.url} has no such model or page (404{said}): choose a model it lists."
            )
        if status in (400, 422):
            return ChatError("refused", f"{self.url} refused {what} ({status}{said}).")
        return ChatError(
            "server_error", f"{self.url} failed on {what} ({status}{said}): see the server's log."
        )

    def _lost(self, why: str | None, stream: _Stream) -> ChatError:
        said = f" ({first_line(why, 120)})" if why else ""
        return ChatError(
            "endpoint_lost",
            f"The stream from {self.url} ended mid-answer{said}: the server stopped or was killed. "
            f"The partial answer is kept; check the server ({SERVED_HINT}), then ask again.",
            stream.text,
        )

    def _clean(self, text: str) -> str:
        """`text` without the key (a server may echo the header it refused)."""
        key = os.environ.get(self.api_key_env, "") if ENV_NAME.fullmatch(self.api_key_env or "-") else ""
        return text.replace(key, "***") if key else text
