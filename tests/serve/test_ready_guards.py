"""The serve readiness probe and watch against what the issue found (issue 38: H3, M4, M5, M11),
each test failing on 73fabd2: the key sent to /health and to a stranger on the port, the watch
thread ended by one failed write, a server that drips its headers holding the probe, a node's
address asked through `$http_proxy`. Real loopback servers on ephemeral ports, the real watch
thread, the stand-in `vllm` (tests/fakes/vllm) as the server's own process."""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from gaudi_tui.core.serve import ready
from gaudi_tui.core.serve.figures import FETCH_TIMEOUT_S, fetch_figures
from tests.alerts.conftest import wait_for
from tests.conftest import FAKES, PYTHON, ROOT, child_env
from tests.raw_server import RawServer

KEY = "sk-test-ready-0123"
MODEL = "m"
WARMUP = (ROOT / "tests" / "serve" / "data" / "vllm-gaudi-docs-buckets.log").read_text().splitlines()[0]


class Recorder:
    """An HTTP server that answers /health (200 while `healthy`) and lists MODEL on /v1/models,
    noting each path asked and its Authorization."""

    def __init__(self, host: str = "127.0.0.1", healthy: bool = True) -> None:
        self.asked: list[tuple[str, str | None]] = []
        self.healthy = threading.Event()
        if healthy:
            self.healthy.set()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                outer.asked.append((self.path, self.headers.get("Authorization")))
                body = json.dumps({"data": [{"id": MODEL}]}).encode() if self.path == "/v1/models" else b""
                self.send_response(200 if outer.healthy.is_set() else 503)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.http = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.http.daemon_threads = True
        self.port = int(self.http.server_address[1])
        self.url = ready.url_of(host, self.port)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def health_asked(self) -> int:
        return sum(path == "/health" for path, _ in self.asked)

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    served = Recorder()
    yield served
    served.close()


def watch_for(run: Path, url: str, api_key: str | None) -> ready.ReadyWatch:
    info = {"url": url, "model": MODEL, "engine": "vllm", "api_key_env": "MY_KEY" if api_key else ""}
    return ready.ReadyWatch(run, run / "output.log", info, api_key)


def is_ready(run: Path) -> bool:
    info = ready.read(run)
    return info is not None and bool(info["ready"])


def test_h3_the_key_goes_only_to_v1_models_never_to_health(recorder: Recorder) -> None:
    """73fabd2: the key went to /health too, which vLLM does not check."""
    assert ready.probe(recorder.url, MODEL, KEY)
    assert recorder.asked == [("/health", None), ("/v1/models", f"Bearer {KEY}")]


def test_h3_a_stranger_on_the_port_before_the_server_binds_never_gets_the_key(tmp_path: Path) -> None:
    """Another user's process listens on the job's port while vLLM warms up (the port is in `ps`):
    it is asked nothing that carries the key, and the job is not ready. Once it is gone and the
    server's own process listens there, the key goes to /v1/models and the job is ready.
    73fabd2: the key went to the stranger's /health and /v1/models, and it was taken for the server."""
    stranger = Recorder()
    hold = tmp_path / "go"
    server = subprocess.Popen(
        [PYTHON, str(FAKES / "vllm" / "vllm"), "serve", MODEL, "--host", "127.0.0.1", "--port", str(stranger.port)],
        env=child_env(VLLM_API_KEY=KEY, FAKE_VLLM_HOLD=str(hold)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    watch = watch_for(tmp_path, stranger.url, KEY)
    watch.server_pid = server.pid  # as the serve supervisor sets it once the server started
    try:
        watch.start()
        wait_for(
            lambda: stranger.health_asked() >= 3 or is_ready(tmp_path),
            30,
            "the watch to ask the stranger's /health",
        )
        stranger.close()
        assert [auth for _, auth in stranger.asked] == [None] * len(stranger.asked), stranger.asked
        assert "/v1/models" not in [path for path, _ in stranger.asked] and not is_ready(tmp_path)
        hold.write_text("")  # the server's warm-up ends: it binds the port
        wait_for(lambda: is_ready(tmp_path), 60, "the server's own process to be found ready")
    finally:
        watch.close()
        server.terminate()
        server.wait(30)


def test_m4_the_watch_goes_on_after_a_poll_that_raises(
    recorder: Recorder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A poll whose serve.json cannot be written (a directory stands in its place) is logged and the
    watch goes on: once the file can be written the server shows ready. 73fabd2: the thread
    died silently at that write, and the server never showed ready."""
    recorder.healthy.clear()
    (tmp_path / "output.log").write_text("")
    watch = watch_for(tmp_path, recorder.url, None)
    watch.start()
    try:
        wait_for(lambda: recorder.health_asked() >= 1, 30, "the watch's first probe")
        serve_json = tmp_path / ready.SERVE_FILE
        serve_json.unlink()
        serve_json.mkdir()
        (serve_json / "in-the-way").write_text("")  # os.replace onto it fails
        with (tmp_path / "output.log").open("a") as log:
            log.write(WARMUP + "\n")  # new warm-up words: the next poll writes serve.json
        asked = recorder.health_asked()
        wait_for(
            lambda: recorder.health_asked() >= asked + 2, 30, "the watch to poll again after the failed write"
        )
        (serve_json / "in-the-way").unlink()
        serve_json.rmdir()
        recorder.healthy.set()
        wait_for(lambda: is_ready(tmp_path), 30, "the server to show ready")
        info = ready.read(tmp_path)
        assert info is not None and "Prompt 1/24" in info["warmup"]
        failed = [r for r in caplog.records if "the readiness watch's poll failed" in r.getMessage()]
        assert len(failed) == 1 and failed[0].exc_info is not None  # logged once, with why
    finally:
        watch.close()


def test_m4_a_ready_server_whose_serve_json_could_not_be_written_shows_ready_once_it_can(
    recorder: Recorder, tmp_path: Path
) -> None:
    """The write that says ready fails (a directory stands in serve.json's place): the watch probes
    again and writes it once it can. Before, the watch took the server for ready at the failed
    write, never probed nor wrote again, and serve.json said "starting" for as long as it ran."""
    recorder.healthy.clear()
    watch = watch_for(tmp_path, recorder.url, None)
    watch.start()
    try:
        wait_for(lambda: recorder.health_asked() >= 1, 30, "the watch's first probe")
        serve_json = tmp_path / ready.SERVE_FILE
        serve_json.unlink()
        serve_json.mkdir()
        (serve_json / "in-the-way").write_text("")
        recorder.healthy.set()

        def models_asked() -> int:
            return sum(path == "/v1/models" for path, _ in recorder.asked)

        wait_for(lambda: models_asked() >= 2, 30, "the watch to probe again after the ready write failed")
        (serve_json / "in-the-way").unlink()
        serve_json.rmdir()
        wait_for(lambda: is_ready(tmp_path), 30, "serve.json to say ready")
    finally:
        watch.close()


def drip(conn: socket.socket, stop: threading.Event) -> None:
    """A server that sends a status line, then one byte of a header every 50 ms, for ever."""
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    while not stop.wait(0.05):
        conn.sendall(b"x")


READERS: dict[str, tuple[Callable[[str], object], float]] = {
    "readiness probe": (lambda url: ready.probe(url, MODEL, KEY), ready.REQUEST_S),
    "served job's figures": (fetch_figures, FETCH_TIMEOUT_S),
}


@pytest.mark.parametrize("reader", list(READERS))
def test_m5_a_server_that_drips_its_headers_is_cut_at_the_deadline(reader: str) -> None:
    """73fabd2: each byte restarted the socket's timeout, so the status line and headers had no
    deadline: the probe (the ready watch) and the figures (the Training poll) waited for ever."""
    call, bound = READERS[reader]
    server = RawServer(drip)
    ended: list[object] = []
    worker = threading.Thread(target=lambda: ended.append(_answer_or_error(call, server.url)), daemon=True)
    started = time.monotonic()
    try:
        worker.start()
        worker.join(bound + 3)
        took = time.monotonic() - started
    finally:
        server.close()
    assert ended, f"{reader} still waiting after {took:.1f} s (its bound: {bound:g} s)"
    assert ended[0] in (False, None) or isinstance(ended[0], Exception), ended[0]


def _answer_or_error(call: Callable[[str], object], url: str) -> object:
    try:
        return call(url)
    except Exception as exc:  # noqa: BLE001 - the test judges it
        return exc


def node_address() -> str | None:
    """An IPv4 address of this host that is not loopback (a cluster node's address, as Slurm's is)."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not address.address.startswith("127."):
                return str(address.address)
    return None


def test_m11_a_nodes_server_is_asked_directly_not_through_http_proxy(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server on a job's node, with `$http_proxy` set (a proxy that answers 503 to all): the probe
    asks the node itself. 73fabd2: it went through the proxy (the key with it) and never showed
    ready."""
    address = node_address()
    if address is None:
        pytest.skip("this host has no IPv4 address but loopback: no node address to ask")
    node_server = Recorder(host=address)
    for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    recorder.healthy.clear()  # the proxy: 503 to everything
    monkeypatch.setenv("http_proxy", recorder.url)
    try:
        assert ready.probe(node_server.url, MODEL, KEY)
    finally:
        node_server.close()
    assert recorder.asked == []
    assert [path for path, _ in node_server.asked] == ["/health", "/v1/models"]
