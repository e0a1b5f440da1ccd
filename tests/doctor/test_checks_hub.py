"""hf.cache_space, hf.hub_reachable, hf.token: passing and failing environments, real sockets and files."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from gaudi_tui.core.doctor.checks import hub
from gaudi_tui.core.doctor.context import DiskUsage
from tests.doctor.hosts import GIB, make_ctx


def disk(free_gib: float):
    def usage(path: str) -> DiskUsage:
        return DiskUsage(2000 * GIB, 0, int(free_gib * GIB))

    return usage


def test_cache_folder_follows_huggingface_hub_rules(tmp_path: Path) -> None:
    assert hub.hub_cache({"HF_HUB_CACHE": "/data/hub", "HF_HOME": "/x"}) == Path("/data/hub")
    assert hub.hub_cache({"HF_HOME": "/data/hf"}) == Path("/data/hf/hub")
    assert hub.hub_cache({"XDG_CACHE_HOME": "/c", "HOME": "/h"}) == Path("/c/huggingface/hub")
    assert hub.hub_cache({"HOME": "/h"}) == Path("/h/.cache/huggingface/hub")


@pytest.mark.parametrize(("free", "status"), [(500, "ok"), (12, "warn"), (2, "fail")])
def test_cache_space(tmp_path: Path, free: float, status: str) -> None:
    result = hub.hf_cache_space(make_ctx(tmp_path, disk_usage=disk(free)))
    assert result.status == status
    assert result.finding == f"{free} GiB free for the Hugging Face cache ({tmp_path / 'hf' / 'hub'})"
    if status != "ok":
        assert "export HF_HOME=" in result.fix


def test_cache_space_measures_the_nearest_existing_folder(tmp_path: Path) -> None:
    seen: list[str] = []

    def usage(path: str) -> DiskUsage:
        seen.append(path)
        return DiskUsage(1, 0, 100 * GIB)

    hub.hf_cache_space(make_ctx(tmp_path, {"HF_HUB_CACHE": str(tmp_path / "not" / "yet")}, disk_usage=usage))
    assert seen == [str(tmp_path)]


def test_unwritable_cache_fails(tmp_path: Path) -> None:
    # /proc/1 is not writable, even for root
    result = hub.hf_cache_space(make_ctx(tmp_path, {"HF_HUB_CACHE": "/proc/1/hub-cache"}))
    assert result.status == "fail"
    assert result.finding == "the Hugging Face cache /proc/1/hub-cache is not writable"


def test_offline_mode_passes_without_network(tmp_path: Path) -> None:
    result = hub.hf_hub_reachable(
        make_ctx(tmp_path, {"HF_HUB_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9"})
    )
    assert result.status == "ok"
    assert result.finding.startswith("HF_HUB_OFFLINE=1: offline mode")


def test_reachable_endpoint_passes(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        env = {"HF_HUB_OFFLINE": None, "HF_ENDPOINT": f"http://127.0.0.1:{port}"}
        result = hub.hf_hub_reachable(make_ctx(tmp_path, env))
    assert (result.status, result.finding) == ("ok", "127.0.0.1 is reachable")


def test_unreachable_endpoint_warns_and_offers_offline_mode(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
    env = {"HF_HUB_OFFLINE": None, "HF_ENDPOINT": f"http://127.0.0.1:{port}"}
    result = hub.hf_hub_reachable(make_ctx(tmp_path, env))
    assert result.status == "warn"
    assert result.finding == "cannot reach 127.0.0.1: Connection refused, and HF_HUB_OFFLINE is not set"
    assert result.env_fix == {"HF_HUB_OFFLINE": "1"}


class Proxy:
    """A real HTTP proxy front on loopback: answers one CONNECT with `status` and records the request."""

    def __init__(self, status: str) -> None:
        self.status = status
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.request = b""
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            while b"\r\n\r\n" not in self.request:
                chunk = conn.recv(1024)
                if not chunk:
                    return
                self.request += chunk
            conn.sendall(f"{self.status}\r\n\r\n".encode())

    def close(self) -> None:
        self.thread.join(5)
        self.server.close()


def test_through_a_proxy_a_real_connect_request_asks_for_the_hub(tmp_path: Path) -> None:
    proxy = Proxy("HTTP/1.1 200 Connection established")
    env = {"HF_HUB_OFFLINE": None, "HTTPS_PROXY": f"http://user:p%40ss@127.0.0.1:{proxy.port}"}
    result = hub.hf_hub_reachable(make_ctx(tmp_path, env))
    proxy.close()
    assert (result.status, result.finding) == (
        "ok",
        f"huggingface.co is reachable through the proxy 127.0.0.1:{proxy.port} (it opened a tunnel)",
    )
    assert proxy.request.startswith(b"CONNECT huggingface.co:443 HTTP/1.1\r\n")
    assert b"Proxy-Authorization: Basic dXNlcjpwQHNz\r\n" in proxy.request  # user:p@ss, never shown
    assert "p@ss" not in f"{result.finding}{result.explanation}{result.fix}"


def test_a_proxy_that_refuses_the_tunnel_is_not_called_reachable(tmp_path: Path) -> None:
    proxy = Proxy("HTTP/1.1 403 Forbidden")
    env = {"HF_HUB_OFFLINE": None, "HTTPS_PROXY": f"http://127.0.0.1:{proxy.port}"}
    result = hub.hf_hub_reachable(make_ctx(tmp_path, env))
    proxy.close()
    assert result.status == "warn"
    assert result.finding == (
        f"the proxy 127.0.0.1:{proxy.port} answers but did not open a tunnel to huggingface.co:443: "
        "HTTP/1.1 403 Forbidden"
    )
    assert result.env_fix == {"HF_HUB_OFFLINE": "1"}


def test_token_in_the_environment_is_never_shown(tmp_path: Path) -> None:
    secret = "hf_notARealTokenButSecret123"
    result = hub.hf_token(make_ctx(tmp_path, {"HF_TOKEN": secret}))
    assert (result.status, result.finding) == ("ok", "a Hugging Face token is set in HF_TOKEN (not shown)")
    assert secret not in f"{result.finding}{result.explanation}{result.fix}"


def test_token_file_private_passes_and_shared_warns(tmp_path: Path) -> None:
    token = tmp_path / "hf" / "token"
    token.parent.mkdir()
    token.write_text("hf_secretsecret")
    token.chmod(0o600)
    private = hub.hf_token(make_ctx(tmp_path))
    assert (private.status, private.finding) == (
        "ok",
        f"a Hugging Face token is stored in {token} (not shown)",
    )
    token.chmod(0o644)
    shared = hub.hf_token(make_ctx(tmp_path))
    assert shared.status == "warn"
    assert shared.finding == f"the token file {token} can be read by other users (mode 644)"
    assert shared.fix == f"chmod 600 {token}"
    assert "hf_secretsecret" not in f"{shared.finding}{shared.explanation}{shared.fix}"


def test_no_token(tmp_path: Path) -> None:
    result = hub.hf_token(make_ctx(tmp_path))
    assert (result.status, result.finding) == ("ok", "no Hugging Face token: public models only")
    assert "hf auth login" in result.explanation
