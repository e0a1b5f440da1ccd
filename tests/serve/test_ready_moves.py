"""A server on a cluster node that moves (a Slurm requeue after it was ready: the node writes
serve-node.json again, with a new node or port, or the same address for a new start): the readiness
watch marks it not ready and probes the new address until it answers. Real files, the real watch
thread, real loopback HTTP servers (what the node's server answers: /health, then /v1/models)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gaudi_tui.core.jobs.kinds import serve_cluster
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.targets.slurm import record as slurm_record
from gaudi_tui.core.jobs.targets.slurm.record import SlurmRecord
from gaudi_tui.core.serve import node, ready
from tests.alerts.conftest import wait_for

MODEL = "demo-model"


class Server:
    """A loopback server that answers /health 200 while `healthy`, else 503, and lists MODEL."""

    def __init__(self, healthy: bool) -> None:
        self.healthy = threading.Event()
        if healthy:
            self.healthy.set()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                up = outer.healthy.is_set()
                body = json.dumps({"data": [{"id": MODEL}]}).encode() if self.path == "/v1/models" else b""
                self.send_response(200 if up else 503)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.http.server_address[1])
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    first, second = Server(healthy=True), Server(healthy=False)
    yield first, second
    first.close()
    second.close()


def served(run: Path) -> dict:
    info = ready.read(run)
    assert info is not None
    return info


def test_a_server_that_moves_after_ready_is_not_ready_until_its_new_address_answers(
    tmp_path: Path, servers: tuple[Server, Server]
) -> None:
    first, second = servers
    log = tmp_path / "stdout.log"
    log.write_text("")
    node.write(tmp_path, 1, "n1", "127.0.0.1", first.port, "127.0.0.1", MODEL)
    watch = ready.ReadyWatch(
        tmp_path, log, {"url": "", "model": MODEL, "engine": "vllm", "api_key_env": ""}, None,
        locate=lambda: node.read(tmp_path, 1),
    )  # fmt: skip
    watch.start()
    try:
        url_1, url_2 = node.url("127.0.0.1", first.port), node.url("127.0.0.1", second.port)
        wait_for(
            lambda: served(tmp_path)["ready"] and served(tmp_path)["url"] == url_1, 15, "ready on node 1"
        )
        ready_at = served(tmp_path)["ready_at"]

        # requeued onto another node (port): not ready there until it answers
        node.write(tmp_path, 1, "n2", "127.0.0.1", second.port, "127.0.0.1", MODEL)
        wait_for(lambda: served(tmp_path)["url"] == url_2, 15, "the new address")
        assert served(tmp_path)["ready"] is False and served(tmp_path)["ready_at"] is None
        second.healthy.set()
        wait_for(lambda: served(tmp_path)["ready"], 15, "ready at the new address")
        assert served(tmp_path)["url"] == url_2 and served(tmp_path)["ready_at"] > ready_at

        # requeued again onto the same node and port: a new start, not ready until it answers again
        second.healthy.clear()
        node.write(tmp_path, 1, "n2", "127.0.0.1", second.port, "127.0.0.1", MODEL)
        wait_for(lambda: not served(tmp_path)["ready"], 15, "not ready after the new start")
        second.healthy.set()
        wait_for(lambda: served(tmp_path)["ready"], 15, "ready after the new start")
    finally:
        watch.close()
    assert served(tmp_path)["ready"] is False  # the server ended


def test_a_requeue_the_supervisor_saw_is_a_new_start_before_the_node_writes(tmp_path: Path) -> None:
    """The Slurm watch's `located`: the node's file plus the requeues of the supervisor's record,
    so a requeue changes it (not ready) while the old node's file still stands."""
    run = RunFolder(tmp_path)
    node.write(tmp_path, 1, "n1", "127.0.0.1", 8000, "127.0.0.1", MODEL)
    assert serve_cluster.located(run, 2) is None  # an older attempt's file
    before = serve_cluster.located(run, 1)
    assert before is not None and before["url"] == "http://127.0.0.1:8000" and before["restarts"] == "0"
    slurm_record.write(run, SlurmRecord(attempt=1, job_name="j", script="s", job_id=7, restarts=1))
    after = serve_cluster.located(run, 1)
    assert after is not None and after != before and after["url"] == before["url"]
