"""Server-sent events from a bounded `http.Response`, by the WHATWG event-stream rules as
openai-python's `_streaming.py` reads them (adapted there from httpx-sse): a line starting ":" is a
comment, `data:` lines join with "\\n", `event`, `id` and `retry` are fields (one space after the
colon dropped), a blank line ends an event, an event not ended when the stream ends is dropped.
Unlike that decoder, which grows one event's bytes with no cap until a blank line, every line, every
event and the whole stream have a cap, and the response's deadline bounds the whole exchange: a line
with no end, an event that never ends and a stream that never stops all end in an HttpError.
Lines end with "\\n" or "\\r\\n" (a lone "\\r", which no OpenAI-compatible server sends, is not one).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gaudi_tui.core.untrusted.http import HttpError, Response

MAX_EVENT = 1 << 20
"""One event's data: a chunk of a chat answer is a few hundred bytes."""
MAX_STREAM = 64 << 20
"""A whole stream: a long answer's chunks, with their JSON around each token."""


@dataclass(frozen=True)
class Event:
    data: str
    event: str | None = None
    id: str | None = None
    retry: int | None = None


def events(response: Response, max_event: int = MAX_EVENT, max_stream: int = MAX_STREAM) -> Iterator[Event]:
    """Each event of `response`'s body, in order; an HttpError once a cap or the deadline is passed."""
    data: list[str] = []
    size = total = 0
    event: str | None = None
    last_id: str | None = None
    retry: int | None = None
    for raw in response.lines(max_event):
        total += len(raw) + 1
        if total > max_stream:
            raise HttpError(response.url, f"streamed more than {max_stream:,} bytes")
        line = raw.decode("utf-8", "replace")
        if not line:
            if data or event is not None:
                yield Event("\n".join(data), event, last_id, retry)
            data, size, event = [], 0, None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            size += len(raw)
            if size > max_event:
                raise HttpError(response.url, f"sent an event longer than {max_event:,} bytes")
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and value.isdigit() and len(value) < 10:
            retry = int(value)
