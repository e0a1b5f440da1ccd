"""Ray's dashboard REST GET (`targets/ray/nodes.get_json`) goes through the shared bounded GET
(core/untrusted/http.py), on a real loopback server: a dashboard that drips its answer meets the deadline
over the whole answer, too big an answer, a redirect and a bad status are ClusterErrors in Ray's
words, and a loopback dashboard (an SSH tunnel) is asked past `$http_proxy`."""

from __future__ import annotations

import http.server
import json
import subprocess
import threading
from collections.abc import Iterator

import pytest

from gaudi_tui.core.jobs.targets.ray import nodes
from gaudi_tui.core.jobs.targets.ray.nodes import ClusterError
from tests.conftest import PYTHON, child_env

TIMEOUT_S = 1.0
ANSWER = {"data": {"result": {"result": []}}}


@pytest.fixture(autouse=True)
def short_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(nodes.TIMEOUT_ENV, str(TIMEOUT_S))


@pytest.fixture
def dashboard() -> Iterator[str]:
    """/ok answers ANSWER; /drip it padded to 240 bytes, one every 0.1 s (DRIP_S); /moved is a 302 to
    /ok; /big more than MAX_ANSWER; any other path 404."""
    stop = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = json.dumps(ANSWER).encode() + (b" " * 200 if self.path == "/drip" else b"")
            if self.path == "/moved":
                self.send_response(302)
                self.send_header("Location", "/ok")
                self.end_headers()
            elif self.path in ("/ok", "/drip", "/big"):
                size = nodes.MAX_ANSWER + 1 if self.path == "/big" else len(body)
                self.send_response(200)
                self.send_header("Content-Length", str(size))
                self.end_headers()
                if self.path == "/ok":
                    self.wfile.write(body)
                elif self.path == "/big":
                    self.wfile.write(b" " * size)
                for byte in body if self.path == "/drip" else b"":
                    if stop.wait(0.1):
                        return
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
            else:
                self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


DRIP_S = 24.0
"""How long /drip takes to send its whole answer."""


def refused(address: str, path: str, bound: float = DRIP_S / 2) -> str:
    """The ClusterError get_json raised, checking it came before `bound` seconds (in a thread, so
    a hang fails the test instead of stalling it). The bound is half the drip's length, whatever
    the machine's load: an answer that waited for the whole drip cannot meet it; the message says
    which deadline it met."""
    said: list[object] = []

    def ask() -> None:
        try:
            said.append(nodes.get_json(address, path))
        except ClusterError as exc:
            said.append(exc)

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(bound)
    assert not thread.is_alive(), f"get_json {path} still waiting after {bound:g} s"
    assert said and isinstance(said[0], ClusterError), f"not refused: {said}"
    return str(said[0])


def test_a_dashboard_that_drips_its_answer_meets_the_deadline(dashboard: str) -> None:
    # each wait for a byte is short (0.1 s), the whole answer is not (24 s)
    text = refused(dashboard, "/drip")
    assert text.startswith(f"cannot reach the Ray cluster at http://{dashboard} (did not answer within 1 s)")
    assert "ssh -L 8265" in text


def test_too_big_a_redirect_and_a_bad_status_are_cluster_errors(dashboard: str) -> None:
    assert f"(answered more than {nodes.MAX_ANSWER:,} bytes)" in refused(dashboard, "/big")
    assert "(HTTP 302 Found)" in refused(dashboard, "/moved")  # not followed
    assert "(HTTP 404 Not Found)" in refused(dashboard, "/nowhere")


def test_a_loopback_dashboard_is_asked_past_the_proxy(dashboard: str) -> None:
    """A panel started with a `$http_proxy` (a dead one here) still reaches a tunnelled dashboard:
    a child process, as urllib's default opener reads the proxies once per process."""
    code = f"import json; from gaudi_tui.core.jobs.targets.ray import nodes; print(json.dumps(nodes.get_json({dashboard!r}, '/ok')))"
    env = {k: v for k, v in child_env(http_proxy="http://127.0.0.1:9").items() if k.lower() != "no_proxy"}
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ANSWER
