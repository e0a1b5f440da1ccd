"""Every HTTP reader of the panel against hostile servers on 127.0.0.1 (issue 38, C): a server that
drips its headers, answers a bad status line, redirects, closes mid-body, sends a 100 MiB line with
no end or a stream that never ends, a 5000-digit integer, 100,000 nested brackets or invalid UTF-8.

The readers: the chat endpoint client (its stream and /v1/models), serve readiness, a server's
/metrics figures, a Prometheus query, the Ray dashboard and the webhook sink. For each case:
memory grows by less than 64 MiB (tracemalloc's peak), the reader answers within a bound, the caller
gets a clear error (its own error class, or its "not ready"/"failed" value), and the same reader then
reads a good server. The servers are raw sockets on ephemeral ports, on threads stopped at the end.
"""

from __future__ import annotations

import socket
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from gaudi_tui.core.alerts import sinks
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.chat import endpoint
from gaudi_tui.core.chat.endpoint import EndpointClient
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from gaudi_tui.core.fleet.prometheus import PrometheusClient, PrometheusError
from gaudi_tui.core.jobs.targets.ray import nodes
from gaudi_tui.core.serve import ready
from gaudi_tui.core.serve.figures import FiguresError, fetch_figures
from tests.raw_server import RawServer

MIB = 1 << 20
MEMORY_BOUND = 64 * MIB
TIME_BOUND_S = 12.0
"""Every reader below is given 2 s a request (the chat stream 2 s idle, 4 s in all)."""
FILLER = b"x" * MIB
"""The 100 MiB line's bytes, sent a MiB at a time (made before tracemalloc starts)."""
BIG_INT = b"1" * 5000
DEEP = b"[" * 100_000 + b"]" * 100_000
CHUNK = b'{"choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}'


# ---- the servers --------------------------------------------------------------------------------


def _request(conn: socket.socket) -> bytes:
    """Read one request (headers and a Content-Length body); its first line."""
    data = b""
    while b"\r\n\r\n" not in data:
        got = conn.recv(65536)
        if not got:
            return b""
        data += got
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        got = conn.recv(65536)
        if not got:
            break
        body += got
    return head.split(b"\r\n", 1)[0]


def _answer(body: bytes, content_type: bytes = b"application/json") -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type + b"\r\nContent-Length: "
        + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
    )  # fmt: skip


def _good(first_line: bytes) -> bytes:
    """What a well-behaved server of each reader answers."""
    path = first_line.split(b" ")[1] if b" " in first_line else b"/"
    if path.endswith(b"/v1/chat/completions"):
        done = b'{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'
        stream = b"data: " + CHUNK + b"\n\n" + b"data: " + done + b"\n\ndata: [DONE]\n\n"
        return _answer(stream, b"text/event-stream")
    if path.endswith(b"/v1/models"):
        return _answer(b'{"object":"list","data":[{"id":"m","object":"model"}]}')
    if path.endswith(b"/metrics"):
        return _answer(
            b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n", b"text/plain"
        )
    if path.startswith(b"/api/v1/query"):
        return _answer(
            b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}'
        )
    if path.startswith(b"/api/v0/nodes"):
        return _answer(
            b'{"data":{"result":{"result":[{"node_id":"n1","node_ip":"10.0.0.1","state":"ALIVE"}]}}}'
        )
    if path.startswith(b"/api/cluster_status"):
        return _answer(b'{"data":{"clusterStatus":{"loadMetricsReport":{"usageByNode":{}}}}}')
    return _answer(b"")  # /health, the webhook


def _content(first_line: bytes, payload: bytes) -> bytes:
    """`payload` where each reader expects its JSON (or, for /metrics, its text value)."""
    if b"/v1/chat/completions" in first_line:
        return _answer(b"data: " + payload + b"\n\n", b"text/event-stream")
    if b"/metrics" in first_line:
        return _answer(b"vllm:num_requests_running " + payload + b"\n", b"text/plain")
    return _answer(payload)


def _endless(conn: socket.socket, first_line: bytes, stop: threading.Event) -> None:
    """A stream that never ends: chat chunks (past any token bound) or, to the others, bytes."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    conn.sendall(head)
    piece = b"data: " + CHUNK + b"\n\n" if b"/v1/chat/completions" in first_line else b"0" * 4096
    while not stop.wait(0.001):
        conn.sendall(piece)


def _line_without_end(conn: socket.socket, first_line: bytes, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: ")
    for _ in range(100):
        if stop.is_set():
            return
        conn.sendall(FILLER)


def _drip(conn: socket.socket, first_line: bytes, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    while not stop.wait(0.05):
        conn.sendall(b"X")


def _send(data: bytes | Callable[[bytes], bytes]) -> Callable[[socket.socket, bytes, threading.Event], None]:
    def behave(conn: socket.socket, first_line: bytes, stop: threading.Event) -> None:
        conn.sendall(data(first_line) if callable(data) else data)

    return behave


CASES: dict[str, Callable[[socket.socket, bytes, threading.Event], None]] = {
    "drips headers": _drip,
    "bad status line": _send(b"HTZP/9 what\r\n\r\n"),
    "redirect": _send(b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:9/x\r\nContent-Length: 0\r\n\r\n"),
    "closes mid-body": _send(b'HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{"data": [{"id"'),
    "100 MiB line with no end": _line_without_end,
    "endless stream": _endless,
    "5000-digit integer": _send(
        lambda line: (
            _content(line, b'{"data":[{"id":"m"}],"n":' + BIG_INT + b"}")
            if b"/metrics" not in line
            else _content(line, BIG_INT)
        )
    ),
    "100,000 nested brackets": _send(lambda line: _content(line, DEEP)),
    "invalid UTF-8": _send(lambda line: _content(line, b'{"data":[{"id":"\xff\xfe m"}]}')),
}
CONTENT = {"5000-digit integer", "100,000 nested brackets", "invalid UTF-8"}


class Server(RawServer):
    """A loopback server on an ephemeral port whose every connection gets `behave`."""

    def __init__(self, behave: Callable[[socket.socket, bytes, threading.Event], None]) -> None:
        def serve(conn: socket.socket, stop: threading.Event) -> None:
            if first := _request(conn):
                behave(conn, first, stop)

        super().__init__(serve)


@pytest.fixture(scope="module")
def good() -> Iterator[Server]:
    server = Server(lambda conn, first, stop: conn.sendall(_good(first)))
    yield server
    server.close()


# ---- the readers --------------------------------------------------------------------------------

ALERT = Alert("job_ended", "info", "run-1", "Job succeeded", "<!channel> done", "k1", 1.0)


def _chat_stream(url: str) -> object:
    client = EndpointClient(url)
    client.model = "m"
    return client.generate([{"role": "user", "content": "hi"}], GenerationParams(max_new_tokens=8))


def _chat_models(url: str) -> object:
    return EndpointClient(url).load(LoadOptions(endpoint=url, model=""))


def _ray(url: str) -> object:
    return nodes.list_nodes(url)


@dataclass(frozen=True)
class Reader:
    call: Callable[[str], object]
    errors: tuple[type[BaseException], ...]
    failed: Callable[[object], bool]
    """For a reader that answers rather than raises: True for its "no"."""
    reads_body: bool = True
    """False for the webhook: a 2xx is delivered, whatever its body."""


def _stopped(answer: object) -> bool:
    return bool(getattr(answer, "stopped", False))


READERS = {
    "chat stream": Reader(_chat_stream, (ChatError,), _stopped),
    "chat /v1/models": Reader(_chat_models, (ChatError,), lambda _: False),
    "serve readiness": Reader(lambda url: ready.probe(url, "m"), (), lambda ok: ok is False),
    "/metrics figures": Reader(fetch_figures, (FiguresError,), lambda figures: figures is None),
    "Prometheus query": Reader(
        lambda url: PrometheusClient(url, timeout=2.0).query("up"), (PrometheusError,), lambda _: False
    ),
    "Prometheus free cards": Reader(
        lambda url: PrometheusClient(url, timeout=2.0).keyed_values("q", "instance", "job"),
        (PrometheusError,),
        lambda _: False,
    ),
    "Ray dashboard": Reader(_ray, (nodes.ClusterError,), lambda _: False),
    "webhook": Reader(
        lambda url: sinks.post(url + "/hook/T0KEN", ALERT, 2.0), (), lambda said: isinstance(said, str), False
    ),
}


@pytest.fixture(autouse=True)
def short_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each reader's bounds made short (their values in the product are minutes for a chat stream)."""
    monkeypatch.setattr(endpoint, "READ_TIMEOUT_S", 2.0)
    # raising=False: the same suite ran unchanged on the old code, which had no STREAM_S
    monkeypatch.setattr(endpoint, "STREAM_S", 4.0, raising=False)
    monkeypatch.setattr(endpoint, "CHECK_TIMEOUT_S", 2.0)
    monkeypatch.setenv(nodes.TIMEOUT_ENV, "2")


def bounded_call(call: Callable[[], object]) -> tuple[object, BaseException | None, float, int]:
    """`call`'s result or exception, its time and tracemalloc's peak growth."""
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    started = time.monotonic()
    result: object = None
    raised: BaseException | None = None
    try:
        result = call()
    except Exception as exc:  # noqa: BLE001 - judged by the test
        raised = exc
    took = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return result, raised, took, peak


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("reader", list(READERS))
def test_a_hostile_server_is_bounded_said_and_the_next_server_read(
    reader: str, case: str, good: Server
) -> None:
    spec = READERS[reader]
    server = Server(CASES[case])
    try:
        result, raised, took, peak = bounded_call(lambda: spec.call(server.url))
    finally:
        server.close()
    assert peak < MEMORY_BOUND, f"memory grew by {peak / MIB:.0f} MiB"
    assert took < TIME_BOUND_S, f"answered after {took:.1f} s"
    if raised is not None:
        assert isinstance(raised, spec.errors), f"{type(raised).__name__}: {raised}"
        assert str(raised) and "T0KEN" not in str(raised)
    elif spec.reads_body or case not in CONTENT:
        assert spec.failed(result), f"{case} was read as good: {result!r}"
    if isinstance(result, str):
        assert "T0KEN" not in result  # the webhook's path is a token: never in its words
    ok, raised, _, _ = bounded_call(lambda: spec.call(good.url))
    assert raised is None and not spec.failed(ok), f"the good server after {case}: {raised or ok!r}"
