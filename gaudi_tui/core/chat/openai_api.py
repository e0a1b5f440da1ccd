"""The pieces of the OpenAI-compatible API that need no connection: the server's base URL, the API
key from a named environment variable, the chat request's body, which model to ask, and a server's
reason for a refusal (core/chat/endpoint.py's client uses them)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from gaudi_tui.core.chat.errors import ChatError, first_line
from gaudi_tui.core.chat.options import GenerationParams
from gaudi_tui.core.untrusted.data import Untrusted, loads

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Endpoint:
    """Where a server listens: `url` is its base (`http://host:port`, plus a proxy's path prefix)."""

    scheme: str
    host: str
    port: int
    prefix: str

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.prefix}"


def parse_url(text: str) -> Endpoint:
    """An endpoint from a URL the user typed (a trailing `/v1` is the API's, not the base's)."""
    given = text.strip()
    try:
        parts = urlsplit(given)
        port = parts.port
    except ValueError as exc:
        raise ChatError("endpoint_url", f"{given!r} is not a URL ({exc}).") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ChatError(
            "endpoint_url",
            f"{given!r} is not an http(s) URL: give the server's base, e.g. http://127.0.0.1:8000.",
        )
    if parts.username or parts.password:
        raise ChatError(
            "endpoint_url",
            "The URL holds a user or password: put the key in an environment variable instead.",
        )
    prefix = parts.path.rstrip("/")
    prefix = prefix.removesuffix("/v1").removesuffix("/chat/completions").removesuffix("/v1")
    default = 443 if parts.scheme == "https" else 80
    return Endpoint(parts.scheme, parts.hostname, port or default, prefix)


def api_key(env_name: str) -> str | None:
    """The key held by the environment variable `env_name` ("" = the server wants none)."""
    if not env_name:
        return None
    if not ENV_NAME.fullmatch(env_name):
        raise ChatError("api_key", f"{env_name!r} is not an environment variable name (letters, digits, _).")
    value = os.environ.get(env_name, "")
    if not value:
        raise ChatError("api_key", f"The environment variable {env_name} (the server's API key) is not set.")
    return value


def request_body(
    model: str, messages: Sequence[Mapping[str, str]], params: GenerationParams
) -> dict[str, Any]:
    """The chat request for `params`: greedy is temperature 0 (vLLM and `transformers serve` both
    read it so); only fields of OpenAI's API, which strict servers check (422 on any other)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [dict(m) for m in messages],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": params.max_new_tokens,
    }
    if params.do_sample:
        body.update(temperature=params.temperature, top_p=params.top_p)
        if params.seed is not None:
            body["seed"] = params.seed
    else:
        body["temperature"] = 0.0
    return body


def choose_model(url: str, served: Sequence[str], wanted: str) -> str:
    """The model to ask: `wanted`, or the only one served."""
    listed = ", ".join(served[:8]) + (" …" if len(served) > 8 else "")
    if wanted:
        if wanted in served:
            return wanted
        raise ChatError("model", f"{url} does not serve {wanted!r}; it serves: {listed or 'nothing'}.")
    if len(served) == 1:
        return served[0]
    if not served:
        raise ChatError("model", f"{url} lists no model on /v1/models: is it still loading one?")
    raise ChatError("model", f"{url} serves {len(served)} models ({listed}): choose one.")


def parse_json(raw: bytes) -> Any:
    """A server's JSON answer through the untrusted reader, else its text (an error page)."""
    try:
        return loads(raw, what="the answer")
    except Untrusted:
        return raw[:4096].decode("utf-8", "replace")


def detail(data: Any) -> str:
    """A server's reason: FastAPI's {"detail"}, OpenAI's {"error": {"message"}}, or the text."""
    if isinstance(data, dict):
        for key in ("detail", "error", "message"):
            value = data.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if value:
                return first_line(str(value), 240)
        return ""
    return first_line(str(data), 240)
