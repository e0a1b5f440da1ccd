"""What answers in a chat: an engine of the panel's (core/chat/client.py) or an OpenAI-compatible
server (core/chat/endpoint.py). Both have the shape `ChatClient` names; `open_client` picks one
for the load options."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from gaudi_tui.core.chat.client import Answer, Cancel, EngineClient
from gaudi_tui.core.chat.endpoint import EndpointClient
from gaudi_tui.core.chat.metrics import LoadReport
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions


class ChatClient(Protocol):
    """Start, load, then stream answers (one at a time, from a worker thread); `stop` from any thread."""

    @property
    def pid(self) -> int | None: ...

    def start(self) -> None: ...

    def load(
        self,
        options: LoadOptions,
        on_progress: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> LoadReport: ...

    def generate(
        self,
        messages: Sequence[Mapping[str, str]],
        params: GenerationParams,
        on_text: Callable[[str], None] | None = None,
        cancel: Cancel | None = None,
        on_warning: Callable[[str], None] | None = None,
    ) -> Answer: ...

    def stop(self) -> None: ...

    def shutdown(self, timeout: float = ...) -> None: ...


def open_client(
    options: LoadOptions,
    env: Mapping[str, str] | None = None,
    on_exit: Callable[[str], None] | None = None,
    log_path: Path | None = None,
) -> ChatClient:
    """The server's client when the options name an endpoint, else a new engine (not started)."""
    if options.endpoint:
        return EndpointClient(options.endpoint, options.api_key_env)
    return EngineClient(env=env, on_exit=on_exit, log_path=log_path)
