"""`PrometheusClient`'s kept-alive connections, on real Prometheus servers: a refresh opens no new
connection once warm (counted by Prometheus itself), a restart between refreshes is survived (the
dead kept connection is replaced at once; while it is down, a clear error, fast), every call is
bounded by the timeout as a whole, and a password in the URL is sent and never shown."""

from __future__ import annotations

import base64
import http.server
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gaudi_tui.core.fleet import fetch
from gaudi_tui.core.fleet.prometheus import AT_ONCE, PrometheusClient, PrometheusError
from tests import required
from tests.fleet.bcrypt_hash import bcrypt_hash
from tests.fleet.stack import FleetStack, free_port, silent_target, start_prometheus, stop

ACCEPTED = 'net_conntrack_listener_conn_accepted_total{listener_name="http"}'


def accepted(url: str) -> int:
    """The connections Prometheus's web listener has accepted (its own /metrics, on a new one)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith(ACCEPTED):
                return int(float(line.split()[-1]))
    raise AssertionError(f"no {ACCEPTED} in {url}/metrics")


def test_refreshes_reuse_the_kept_connections(fleet_stack: FleetStack) -> None:
    client = PrometheusClient(fleet_stack.url, timeout=10)
    reader = fetch.ScreenReader(client)
    queries = reader.queries([e.instance for e in fleet_stack.exporters])
    assert len(queries) + 1 <= AT_ONCE  # + the label-values lookup: every query of a refresh at once
    deadline = time.monotonic() + 60
    # the first scrapes; warm: one connection per query asked at once, at most
    while len(reader.refresh([])[0].hosts) < len(fleet_stack.exporters):
        assert time.monotonic() < deadline, "Prometheus never listed the exporters"
        time.sleep(0.5)
    warm = client.opened
    assert 1 <= warm <= len(queries) + 1
    before = accepted(fleet_stack.url)
    for _ in range(5):
        overview, _cards = reader.refresh([e.instance for e in fleet_stack.exporters])
        assert len(overview.hosts) >= len(fleet_stack.exporters)
        assert all(line.startswith("not reported: ") for line in overview.problems), overview.problems
    for _ in range(10):
        assert client.query("up")
    assert accepted(fleet_stack.url) - before == 1 + (client.opened - warm)  # 1: `accepted`'s own
    assert client.opened - warm <= len(queries) + 1  # the cards' queries, asked once more at once
    assert client.opened <= AT_ONCE
    client.close()


@pytest.fixture()
def guarded(tmp_path: Path) -> Iterator[tuple[Path, int, tuple[str, ...]]]:
    """The folder, port and arguments of a Prometheus that wants user `panel`, password `s3cret`."""
    required.tools("prometheus", "prometheus")
    hashed = bcrypt_hash("s3cret")
    if hashed is None:
        required.require("prometheus", "this system's libcrypt makes no bcrypt hash for the web config")
    web = tmp_path / "web.yml"
    web.write_text(f"basic_auth_users:\n  panel: '{hashed}'\n")
    yield tmp_path, free_port(), (f"--web.config.file={web}",)


def test_a_restart_is_survived_and_a_password_is_sent_not_shown(
    guarded: tuple[Path, int, tuple[str, ...]],
) -> None:
    folder, port, args = guarded
    config = "global:\n  scrape_interval: 1h\nscrape_configs: []\n"
    process, url = start_prometheus(config, folder, port, args)
    try:
        client = PrometheusClient(f"http://panel:s3cret@127.0.0.1:{port}", timeout=5)
        assert client.url == url and "s3cret" not in repr(vars(client).get("url"))
        assert client.query("vector(1)")[0].value == 1.0
        assert client.query("vector(2)")[0].value == 2.0 and client.opened == 1

        stop(process)  # the kept connection dies with it; while it is down: a clear error, at once
        started = time.monotonic()
        with pytest.raises(PrometheusError, match=f"Prometheus unreachable at {url} .*SSH tunnel") as error:
            client.query("vector(3)")
        assert time.monotonic() - started < 2 and "s3cret" not in str(error.value)

        process, _ = start_prometheus(config, folder, port, args)
        assert client.query("vector(4)")[0].value == 4.0  # a new connection, no error
        opened = client.opened
        stop(process)
        process, _ = start_prometheus(config, folder, port, args)  # restarted between two queries
        assert client.query("vector(5)")[0].value == 5.0  # the dead kept one replaced, no error shown
        assert client.opened == opened + 1

        wrong = PrometheusClient(f"http://panel:wrong@127.0.0.1:{port}", timeout=5)
        with pytest.raises(PrometheusError, match=f"Prometheus at {url} answered HTTP 401") as error:
            wrong.query("vector(1)")
        assert "wrong" not in str(error.value)
    finally:
        stop(process)


def trickle(listener: socket.socket, stop_at: threading.Event) -> None:
    """Answer each connection one header byte every 0.2 s, forever: no socket operation waits long."""
    listener.settimeout(0.2)
    while not stop_at.is_set():
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            continue
        with connection:
            connection.recv(4096)
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"x" * 10_000:
                if stop_at.wait(0.2):
                    break
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    break


def test_the_timeout_bounds_every_call_as_a_whole() -> None:
    silent = silent_target()  # takes the connection, never answers
    slow = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()
    thread = threading.Thread(target=trickle, args=(slow, done), daemon=True)
    thread.start()
    try:
        for listener in (silent, slow):
            client = PrometheusClient(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=1.0)
            started = time.monotonic()
            with pytest.raises(PrometheusError, match=r"unreachable at .* \(timed out after 1 s\)"):
                client.query("up")
            assert time.monotonic() - started < 1.5
    finally:
        done.set()
        thread.join(5)
        slow.close()
        silent.close()


def test_http_proxy_from_the_environment_is_used_as_urllib_would(
    fleet_stack: FleetStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forwarding proxy on loopback in front of the real Prometheus, asked for as a remote host
    (`prometheus.invalid`, which the proxy forwards to it): asked for the whole URL, with the proxy's
    own password; `no_proxy` bypasses it; a Prometheus on loopback is never asked through it."""
    seen: list[tuple[str, str]] = []
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    port = fleet_stack.url.rsplit(":", 1)[1]
    remote = f"http://prometheus.invalid:{port}"

    class Forward(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            seen.append((self.path, self.headers.get("Proxy-Authorization", "")))
            with direct.open(self.path.replace(remote, fleet_stack.url), timeout=5) as answer:
                body = answer.read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("http_proxy", f"http://relay:pw@127.0.0.1:{proxy.server_port}")
        client = PrometheusClient(remote, timeout=5)
        assert client.query("vector(7)")[0].value == 7.0 and client.query("vector(8)")[0].value == 8.0
        assert [path.split("?")[0] for path, _ in seen] == [f"{remote}/api/v1/query"] * 2
        assert {auth for _, auth in seen} == {"Basic " + base64.b64encode(b"relay:pw").decode()}
        assert client.opened == 1  # kept alive through the proxy too
        assert PrometheusClient(fleet_stack.url, timeout=5).query("vector(9)")[0].value == 9.0
        assert len(seen) == 2  # loopback: past the proxy
        monkeypatch.setenv("no_proxy", "prometheus.invalid")
        with pytest.raises(PrometheusError, match="unreachable"):
            PrometheusClient(remote, timeout=5).query("vector(10)")
        assert len(seen) == 2
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_an_answer_read_again_only_when_it_changed(
    fleet_stack: FleetStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pair_values` keeps its last reading of each query: the same answer (at another evaluation
    time) gives the same values without reading the body again, a changed one is read anew, and
    what it returns is the caller's."""
    client = PrometheusClient(fleet_stack.url, timeout=5)
    read: list[bytes] = []
    reader = client._pair_values

    def counted(body: bytes, promql: str, one: str, other: str) -> list[tuple[str, str, float]]:
        read.append(body)
        return reader(body, promql, one, other)

    monkeypatch.setattr(client, "_pair_values", counted)
    moving = 'label_replace(label_replace(vector(time()), "instance", "h", "", ""), "job", "j", "", "")'
    same = 'label_replace(label_replace(vector(8), "instance", "h", "", ""), "job", "j", "", "")'
    at = time.time() - 60
    first = client.pair_values(same, "instance", "job", at)
    first.append(("changed", "by", 0.0))
    assert client.pair_values(same, "instance", "job", at + 7) == [("h", "j", 8.0)]
    assert len(read) == 1  # the same answer at another time: its bytes differ in the stamp only
    now = client.pair_values(moving, "instance", "job", at)
    later = client.pair_values(moving, "instance", "job", at + 2)
    assert later[0][:2] == ("h", "j") and later[0][2] == pytest.approx(now[0][2] + 2)
    assert len(read) == 3  # a changed answer is read anew
