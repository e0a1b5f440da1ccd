"""The panel's one HTTP client (core/untrusted/http.py), on real loopback servers: an answer of any
status, a refused port, a server that never answers or drips, one that answers too much, a loopback
server asked past `$http_proxy`, a redirect not followed, a key sent only to its own origin; the
readiness probe and a server's figures both go through it."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from gaudi_tui.core.serve import ready
from gaudi_tui.core.serve.figures import FiguresError, fetch_figures
from gaudi_tui.core.untrusted.http import MAX_BODY, Credential, HttpError, get, is_loopback
from tests.chat.serving import free_port
from tests.conftest import ROOT

METRICS = (ROOT / "tests" / "data" / "vllm" / "metrics_v1.txt").read_bytes()


class Server:
    """A loopback HTTP server: /metrics (vLLM's golden text), /health, /v1/models, /big (more than
    MAX_BODY), /drip (a byte every 0.1 s, never done), /moved (a 302 to /elsewhere); it notes the
    paths asked and their Authorization."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str | None]] = []
        self.stop = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                outer.asked.append((self.path, self.headers.get("Authorization")))
                bodies = {"/metrics": METRICS, "/health": b"", "/v1/models": b'{"data": [{"id": "m"}]}',
                          "/big": b"x" * (MAX_BODY + 1)}  # fmt: skip
                if self.path == "/moved":
                    self.send_response(302)
                    self.send_header("Location", "/elsewhere")
                    self.end_headers()
                elif self.path == "/drip":
                    self.send_response(200)
                    self.end_headers()
                    while not outer.stop.wait(0.1):
                        self.wfile.write(b"#")
                        self.wfile.flush()
                else:
                    body = bodies.get(self.path)
                    self.send_response(404 if body is None else 200)
                    self.send_header("Content-Length", str(len(body or b"")))
                    self.end_headers()
                    self.wfile.write(body or b"")

            def log_message(self, *args: object) -> None:
                pass

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"


@pytest.fixture
def server() -> Iterator[Server]:
    served = Server()
    threading.Thread(target=served.http.serve_forever, daemon=True).start()
    yield served
    served.stop.set()
    served.http.shutdown()
    served.http.server_close()


@pytest.fixture
def silent() -> Iterator[str]:
    """A loopback port that takes connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def ended_within(call: object, seconds: float) -> BaseException | None:
    """Run `call` on a thread; the exception it raised, failing the test when it has not ended in time."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()  # type: ignore[operator]
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    return raised[0] if raised else None


def test_an_answer_of_any_status_comes_back_with_its_body(server: Server) -> None:
    assert get(server.url + "/v1/models", timeout=2.0).body == b'{"data": [{"id": "m"}]}'
    missing = get(server.url + "/nothing", timeout=2.0)
    assert missing.status == 404 and missing.reason == "Not Found"
    assert (
        get(server.url + "/health", timeout=2.0, credential=Credential.bearer(server.url, "sekrit")).status
        == 200
    )
    assert server.asked[-1] == ("/health", "Bearer sekrit")


def test_a_refused_port_and_a_bad_url_are_errors_in_words() -> None:
    url = f"http://127.0.0.1:{free_port()}/health"
    with pytest.raises(HttpError, match=rf"^Cannot reach {url}: Connection refused$"):
        get(url, timeout=2.0)
    with pytest.raises(HttpError, match="is not an http"):
        get("ftp://host/x", timeout=2.0)


def test_a_server_that_never_answers_or_drips_is_cut_at_the_timeout(silent: str, server: Server) -> None:
    started = time.monotonic()
    exc = ended_within(lambda: get(silent + "/health", timeout=0.5), 10.0)
    assert isinstance(exc, HttpError) and str(exc) == f"{silent}/health did not answer within 0.5 s"
    exc = ended_within(lambda: get(server.url + "/drip", timeout=0.5), 10.0)
    assert isinstance(exc, HttpError) and exc.reason == "did not answer within 0.5 s"
    exc = ended_within(lambda: ready.probe(silent, "m"), 10.0)  # not ready, in words nowhere
    assert exc is None and time.monotonic() - started < 30


def test_a_drip_on_metrics_is_cut_at_the_timeout(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server.http.RequestHandlerClass, "do_GET", drip_handler(server))
    exc = ended_within(lambda: fetch_figures(server.url, 0.5), 10.0)
    assert isinstance(exc, FiguresError) and "did not answer within 0.5 s" in str(exc)


def drip_handler(server: Server) -> object:
    def do_get(self: http.server.BaseHTTPRequestHandler) -> None:
        self.send_response(200)
        self.end_headers()
        while not server.stop.wait(0.1):
            self.wfile.write(b"# drip\n")
            self.wfile.flush()

    return do_get


def test_more_than_the_bound_is_an_error_not_a_silent_cut(server: Server) -> None:
    with pytest.raises(HttpError, match=rf"^{server.url}/big answered more than {MAX_BODY:,} bytes$"):
        get(server.url + "/big", timeout=5.0)
    assert get(server.url + "/metrics", timeout=2.0, max_body=len(METRICS)).body == METRICS
    with pytest.raises(HttpError, match="answered more than 100 bytes"):
        get(server.url + "/metrics", timeout=2.0, max_body=100)


def test_a_big_metrics_answer_is_a_figures_error(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    def do_get(self: http.server.BaseHTTPRequestHandler) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"# filler\n" * (MAX_BODY // 9 + 1))

    monkeypatch.setattr(server.http.RequestHandlerClass, "do_GET", do_get)
    with pytest.raises(FiguresError, match=f"answered more than {MAX_BODY:,} bytes"):
        fetch_figures(server.url)


def test_a_loopback_server_is_asked_past_the_proxy(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `$http_proxy` (a dead one here) cannot reach this host's loopback: it is not used for it."""
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{free_port()}")
    figures = fetch_figures(server.url)
    assert figures is not None and figures.running == 3
    assert ready.probe(server.url, "m") and not ready.probe(server.url, "other")
    assert is_loopback("localhost") and is_loopback("::1") and is_loopback("127.0.0.2")
    assert not is_loopback("10.0.0.7") and not is_loopback("node7")


def test_a_redirect_is_not_followed_so_the_key_stays_put(server: Server) -> None:
    moved = get(server.url + "/moved", timeout=2.0, credential=Credential.bearer(server.url, "sekrit"))
    assert moved.status == 302
    assert [path for path, _ in server.asked] == ["/moved"]
    assert moved.location == "/elsewhere"


def test_a_key_goes_only_to_the_origin_it_was_named_for(server: Server, silent: str) -> None:
    """A key named for one server is refused for any other scheme, host or port: nothing is sent."""
    key = Credential.bearer(silent, "sekrit")
    with pytest.raises(HttpError, match="the key is not sent"):
        get(server.url + "/health", timeout=2.0, credential=key)
    assert server.asked == []
    assert (
        get(server.url + "/health", timeout=2.0, credential=Credential.bearer(server.url + "/v1", "k")).status
        == 200
    )
