"""Serve fixtures: a real `transformers serve` started through the job life cycle, waiting for its
serve.json, and requests to it (stdlib http.client, as the readiness watch)."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import urlsplit

from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.status import TERMINAL
from gaudi_tui.core.serve import ready
from tests import required
from tests.jobs.conftest import log_tail, no_stray_processes, wait_for  # noqa: F401 - autouse guard

DATA = Path(__file__).resolve().parent / "data"
READY_S = 180.0
"""A CPU server on 2 shared cores loads the demo model in 5-40 s (measured while writing these)."""


def need_serving() -> None:
    """`transformers serve` needs the serving extra (fastapi, uvicorn): `make install` installs it."""
    for name in ("fastapi", "uvicorn"):
        required.module(name, "serving", "transformers serve needs transformers[serving]")


def wait_ready(run: RunFolder, timeout: float = READY_S) -> dict:
    def ready_now() -> dict | None:
        info = ready.read(run.path)
        status = run.status()
        if status is not None and status.state in TERMINAL:
            raise AssertionError(f"{run.id} ended {status.state} ({status.error}):\n{log_tail(run)}")
        return info if info is not None and info["ready"] else None

    try:
        return dict(wait_for(ready_now, timeout, f"{run.id} to be ready"))  # type: ignore[arg-type]
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{log_tail(run)}") from None


def open_stream(url: str, model: str, text: str, max_tokens: int) -> http.client.HTTPResponse:
    """A streamed chat request, its response open (read it line by line; close its connection)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=120)
    body = {"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": max_tokens,
            "temperature": 0, "stream": True}  # fmt: skip
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200, response.read()
    return response


def chat(url: str, model: str, text: str, max_tokens: int = 24, stream: bool = False) -> tuple[int, str]:
    """POST /v1/chat/completions (greedy): the status, and the answer (the chunks joined when streamed)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=120)
    body = {
        "model": model,
        "messages": [{"role": "user", "content": text}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": stream,
    }
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        raw = response.read().decode("utf-8", "replace")
    finally:
        conn.close()
    if response.status != 200:
        return response.status, raw
    if not stream:
        return 200, json.loads(raw)["choices"][0]["message"]["content"] or ""
    pieces = []
    for line in raw.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            delta = json.loads(line[6:])["choices"][0].get("delta", {})
            pieces.append(delta.get("content") or "")
    return 200, "".join(pieces)
