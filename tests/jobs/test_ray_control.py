"""A Ray job whose cluster does not answer: nothing may start a second copy, nothing may hang.

No cluster is needed here: the dashboard is a closed port (refused) or a listener that accepts and
never answers (a frozen tunnel). tests/ray/test_ray_faults.py drills the same with a real cluster.
"""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs.monitor import RunWatcher
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.status import ProcRef, effective_state
from gaudi_tui.core.jobs.targets.ray import checks, cluster
from gaudi_tui.core.jobs.targets.ray.nodes import ClusterError, Node
from gaudi_tui.core.jobs.validate import generation_rules
from tests import required
from tests.conftest import CPU, PYTHON, child_env
from tests.jobs.conftest import processes_of, replay, tiny

required.module("ray", "ray", "ray is not installed: pip install 'gaudi-tui[cluster]'")

TIMEOUT_S = 1.5


@pytest.fixture(autouse=True)
def short_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GAUDI_TUI_RAY_TIMEOUT_S", str(TIMEOUT_S))


@pytest.fixture
def refused() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # closed again: nothing listens


@pytest.fixture
def silent() -> Iterator[str]:
    """Accepts every connection (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def ray_run(address: str, state: str = "failed", supervisor: ProcRef | None = None) -> RunFolder:
    """The recorded real Ray run, now pointing at `address`, in `state`, with a checkpoint saved."""
    run = replay(recorded="ray-runs")
    record = json.loads((run.path / "cluster.json").read_text())
    (run.path / "cluster.json").write_text(json.dumps({**record, "address": address}))
    status = run.status()
    assert status is not None
    run.write_status(status.with_(state=state, supervisor=supervisor or status.supervisor))
    with run.metrics_path.open("a") as fh:
        fh.write(
            json.dumps({"event": "save", "step": 10, "checkpoint": "/srv/runs/x/checkpoints/checkpoint-10"})
        )
        fh.write("\n")
    return run


def refusal(action, bound: float) -> str:  # noqa: ANN001 - a callable
    """What `action` refused with, checking it returned within `bound` seconds (run in a thread, so
    a hang fails the test instead of stalling it)."""
    said: list[object] = []

    def act() -> None:
        try:
            said.append(action())
        except control.JobControlError as exc:
            said.append(exc)

    start = time.monotonic()
    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    thread.join(bound)
    took = time.monotonic() - start
    assert not thread.is_alive(), f"still waiting after {bound:g} s"
    assert said and isinstance(said[0], control.JobControlError), f"not refused: {said}"
    assert took < bound
    return str(said[0])


def test_resume_refuses_a_failed_job_while_the_dashboard_is_down(refused: str, gaudi_home: object) -> None:
    run = ray_run(refused)
    before = run.status_path.read_text()
    text = refusal(lambda: control.resume(run), 10)
    assert "may still run" in text and "cannot connect" in text and refused in text
    assert "nothing was started" in text and f"gaudi-tui jobs stop --force {run.id}" in text
    assert run.status_path.read_text() == before and processes_of(gaudi_home) == []  # type: ignore[arg-type]


def test_resume_and_kill_return_within_their_bound_when_the_dashboard_never_answers(silent: str) -> None:
    run = ray_run(silent, state="running", supervisor=ProcRef(1, 0.0))  # the supervisor died: lost
    assert effective_state(run.status(), time.time()) == "lost"  # type: ignore[arg-type]
    text = refusal(lambda: control.resume(run), 4 * TIMEOUT_S + 3)
    assert "may still run" in text and f"did not answer in {TIMEOUT_S:g} s" in text
    text = refusal(lambda: control.kill(run), 4 * TIMEOUT_S + 3)
    assert f"did not answer in {TIMEOUT_S:g} s" in text and "Nothing was recorded" in text
    assert run.status().state == "running"  # type: ignore[union-attr]


def test_a_supervisor_leaves_a_cluster_that_stays_unreachable_saying_so(refused: str) -> None:
    run = ray_run(refused, state="running", supervisor=ProcRef(1, 0.0))
    env = child_env(GAUDI_TUI_RAY_UNREACHABLE_S="2", GAUDI_TUI_RAY_TIMEOUT_S=str(TIMEOUT_S))
    argv = [PYTHON, "-m", "gaudi_tui.core.jobs.supervisor", str(run.path), "--attach"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1, done.stderr[-2000:]
    status = run.status()
    assert status is not None and status.state == "running"  # not ended: it may still run
    assert status.error is not None and "has not answered for 2 s" in status.error
    assert "may still run there; r re-attaches once it answers" in status.error
    assert "does not answer" in run.log_path.read_text() and "leaving the job" in run.log_path.read_text()
    assert "may still run" in refusal(lambda: control.resume(run), 10)


def test_every_jobs_api_failure_is_a_cluster_error_naming_the_cause(refused: str) -> None:
    jobs = cluster.Jobs(refused)
    for call in (lambda: jobs.stop("x"), lambda: jobs.logs("x"), lambda: jobs.info("x")):
        with pytest.raises(cluster.NoAnswer, match="cannot connect"):
            call()
    left = cluster.verify_ended(refused, "01000000", timeout=5)
    assert left.startswith("not verified that nothing is left")
    with pytest.raises(ClusterError):
        cluster.raise_stop_flag(jobs, PYTHON, "x")


def test_a_ray_job_gets_the_rules_every_job_gets_and_keeps_its_secrets(refused: str) -> None:
    spec = tiny(
        target="ray",
        ray_address=refused,
        device="hpu",
        lora=True,
        quantization="int8",
        torch_compile=True,
        model="/nowhere/on/this/host",
        env={"PT_HPU_LAZY_MODE": "1", "HF_TOKEN": "hf_secret"},
    )
    prepared, problems = control.check(spec, CPU, env_fixes={"PT_HPU_MAX_COMPOUND_OP_SIZE": "512"})
    found = {p.field: p.message for p in problems}
    assert "bitsandbytes has no 8-bit kernels for Gaudi" in found["quantization"]
    assert "needs eager mode, but PT_HPU_LAZY_MODE=1" in found["torch_compile"]
    assert found["env"].startswith("HF_TOKEN look like secrets") and "dashboard" in found["env"]
    assert "hf_secret" not in "\n".join(found.values())
    assert "model" not in found  # a path on the cluster's nodes: checked there, not here
    assert prepared.env["PT_ENABLE_INT64_SUPPORT"] == "1"  # Gaudi's own settings, as a local job's
    assert prepared.env["PT_HPU_MAX_COMPOUND_OP_SIZE"] == "512"  # the Checklist's fixes
    env = cluster.job_env(replace(prepared, storage_path="/srv/runs"), RunFolder(Path("/x/run-1")), "key")
    assert env["PT_HPU_METRICS_FILE"] == "/srv/runs/run-1/hpu_metrics.json"
    local = {p.field for p in control.check(replace(spec, target="local"), CPU)[1]}
    assert "model" in local  # a local job's paths are checked on this host


def test_qlora_on_a_first_generation_gaudi_cluster_is_refused() -> None:
    nodes = [Node("a" * 8, "10.0.0.1", True, True, hpu_total=8, hpu_free=8, accelerator="GAUDI")]
    assert checks.generation(nodes) == "GAUDI"
    spec = replace(tiny(target="ray", device="hpu", lora=True, quantization="nf4"), workers=8)
    assert "first-generation Gaudi" in str(generation_rules(spec, checks.generation(nodes)))
    assert generation_rules(spec, "GAUDI2") == []


def test_training_details_mask_secrets() -> None:
    from gaudi_tui.ui.screens.training import details_text

    run = replay()
    run.spec_path.write_text(
        spec_mod.to_toml(replace(run.spec(), env={"HF_TOKEN": "hf_secret", "SEED_NOTE": "kept"}))
    )
    watcher = RunWatcher(run)
    watcher.poll()
    text = details_text(watcher.view(time.time()), run, run.spec())
    assert "hf_secret" not in text and "HF_TOKEN=***" in text and "SEED_NOTE=kept" in text


def test_a_kill_waits_for_the_jobs_actors_and_cards_not_for_a_detached_coordinator() -> None:
    """The state API's actor rows (detail=1, as Ray 2.60 answers): Ray Train's cluster-wide
    coordinator is detached and holds no card, so it does not hold the kill; a detached actor
    holding an HPU does (its card stays taken), and a live actor of the job does."""

    def actor(name: str, detached: bool, needs: dict[str, float], state: str = "ALIVE") -> dict:
        return {"class_name": name, "state": state, "is_detached": detached, "required_resources": needs,
                "node_id": "ab12cd34ef"}  # fmt: skip

    coordinator = actor("AutoscalingCoordinator", True, {})
    rows: list[dict] = [coordinator, actor("RayTrainWorker", False, {"CPU": 1.0}, state="DEAD")]
    asked: list[str] = []

    class StateApi(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            asked.append(self.path)
            body = json.dumps({"data": {"result": {"result": rows}}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StateApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert cluster.verify_ended(address, "02000000", timeout=5) == ""
        assert "detail=1" in asked[0] and "filter_values=02000000" in asked[0]
        rows.append(actor("CardHolder", True, {"CPU": 1.0, "HPU": 1.0}))
        rows.append(actor("TrainWorker", False, {"CPU": 1.0}))
        left = cluster.verify_ended(address, "02000000", timeout=1.5)
        assert left == "still alive: CardHolder on ab12cd34, TrainWorker on ab12cd34", left
    finally:
        server.shutdown()
        server.server_close()
