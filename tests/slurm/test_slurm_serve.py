"""A model server as a Slurm job on the real loopback cluster: a real `transformers serve` of the demo
model in one task on one node, its address chosen on the node (the loopback host it was given
becomes the node's NodeAddr) and read back into serve.json, ready probed from the panel's host, an
answer streamed, `s` drains and the job ends stopped; started by `gaudi-tui serve --target slurm`,
a new supervisor re-attaches and finds it ready again, and a requeue makes it not ready until its
new start answers; a port taken on the node fails the job with its fix; a server across nodes is refused."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

import pytest

from gaudi_tui.core.jobs import control, runfolder
from gaudi_tui.core.jobs.monitor import Monitor
from gaudi_tui.core.jobs.spec import JobSpec, from_mapping, preset
from gaudi_tui.core.jobs.targets.slurm import record as slurm_record
from gaudi_tui.core.jobs.validate import InvalidSpec
from gaudi_tui.core.serve import node, ready
from tests.conftest import ROOT
from tests.jobs.conftest import log_tail, wait_done, wait_for
from tests.serve.conftest import chat, need_serving, open_stream, wait_ready
from tests.slurm.cluster import SlurmTestCluster
from tests.slurm.test_slurm_jobs import CPU

need_serving()


def serve_spec(**values: object) -> JobSpec:
    base = {"kind": "serve", "target": "slurm", "serve_engine": "transformers", "device": "cpu",
            "slurm_nodes": 1, "slurm_cards_per_node": 1, "kill_grace_s": 5.0,
            "env": {"PYTHONPATH": str(ROOT)}}  # fmt: skip
    return from_mapping({**base, **values}, base=preset("serve a model"))


def node_addr(slurm: SlurmTestCluster, name: str) -> str:
    line = slurm.run("scontrol", "show", "node", "-o", name).stdout
    return next(w.split("=", 1)[1] for w in line.split() if w.startswith("NodeAddr="))


@pytest.mark.slow
def test_a_served_model_on_a_node_becomes_ready_at_its_address_answers_and_drains(
    slurm: SlurmTestCluster,
) -> None:
    run = control.submit(serve_spec(serve_host="localhost"), CPU)
    info = wait_ready(run)
    rec = slurm_record.read(run)
    assert rec is not None and len(rec.nodes) == 1, rec
    at = json.loads((run.path / node.NODE_FILE).read_text())
    assert at["node"] == rec.nodes[0] and at["port"] > 0  # port 0: chosen free on the node
    address = node_addr(slurm, rec.nodes[0])
    assert info["url"] == f"http://{address}:{at['port']}" and at["host"] == address  # not "localhost"
    assert info["engine"] == "transformers" and info["model"] == at["model"]
    batch = (run.path / "slurm" / "attempt-1.sbatch").read_text()
    assert "--ntasks-per-node=1" in batch and "--gres=gpu:1" in batch  # one task, the node's card
    row = next(v for v in Monitor().poll() if v.id == run.id)
    assert (
        row.where
        == f"Slurm job {rec.job_id} on {rec.nodes[0]}: running · ready: {info['url']} (transformers)"
    )

    status, streamed = chat(info["url"], info["model"], "Hello", stream=True)
    assert status == 200 and streamed.strip(), streamed

    stream = open_stream(info["url"], info["model"], "Tell me a story", max_tokens=200)
    while not stream.readline().startswith(b"data: "):
        pass
    control.stop(run)  # s: SIGINT to the task (the server), scancel after kill_grace_s
    chunks = [json.loads(x[6:]) for x in stream.read().decode().splitlines() if x.startswith("data: {")]
    assert chunks and chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length"), chunks[-1:]  # drained
    assert wait_done(run, 120) == "stopped", log_tail(run)
    assert "SIGINT sent to the ranks" in run.log_path.read_text()
    after = ready.read(run.path)
    assert after is not None and after["ready"] is False


@pytest.mark.slow
def test_a_port_in_use_on_the_node_fails_the_job_with_its_fix(slurm: SlurmTestCluster) -> None:
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", 0))  # the loopback cluster's NodeAddr: the node's address is taken
    holder.listen()
    try:  # the login host cannot try the node's port: the server itself finds it in use
        run = control.submit(serve_spec(serve_port=holder.getsockname()[1]), CPU)
        assert wait_done(run, 120) == "failed", log_tail(run)
    finally:
        holder.close()
    error = run.status().error or ""  # type: ignore[union-attr]
    assert "address already in use" in error and "fix: the port is in use" in error, error


def test_a_server_across_nodes_is_refused_before_queueing(slurm: SlurmTestCluster) -> None:
    before = len(runfolder.all_runs())
    with pytest.raises(InvalidSpec) as caught:
        control.submit(serve_spec(slurm_nodes=2), CPU)
    assert [p.field for p in caught.value.problems] == ["slurm_nodes"], caught.value.problems
    assert "a model server runs on one node (2 asked)" in str(caught.value)
    assert len(runfolder.all_runs()) == before
    wait_for(lambda: "gaudi-tui" not in slurm.run("squeue", "-h", "-o", "%j").stdout, 5, "nothing queued")


def test_a_job_that_exits_0_on_the_stops_sigint_ends_stopped_not_succeeded(slurm: SlurmTestCluster) -> None:
    """As a server may (vLLM exits 0 on SIGINT): the job ends COMPLETED after the stop's SIGINT."""
    code = "import signal,sys,time; signal.signal(signal.SIGINT, lambda *a: sys.exit(0)); print('armed', flush=True); time.sleep(300)"  # noqa: E501
    spec = from_mapping({"kind": "command", "target": "slurm", "device": "cpu", "slurm_nodes": 1,
                         "slurm_cards_per_node": 1, "kill_grace_s": 30.0, "command": [sys.executable, "-c", code]})  # fmt: skip
    run = control.submit(spec, CPU)
    wait_for(lambda: run.log_path.is_file() and "armed" in run.log_path.read_text(), 60, "the handler set")
    control.stop(run)
    assert wait_done(run, 60) == "stopped", log_tail(run)
    job = slurm_record.read(run)
    assert job is not None and job.state == "COMPLETED"


@pytest.mark.slow
def test_serve_target_slurm_survives_a_new_supervisor_and_a_requeue(
    slurm: SlurmTestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gaudi-tui serve --target slurm` starts the same server as the form; a new supervisor
    re-attaches and finds it ready again; `scontrol requeue` after that starts it anew (the same
    attempt, followed by the re-attached supervisor): not ready until the new start answers."""
    from gaudi_tui.cli import main

    words = ["serve", "demo", "--target", "slurm", "--engine", "transformers", "--device", "cpu",
             "--cards-per-node", "1", "--set", "kill_grace_s=5", "--env", f"PYTHONPATH={ROOT}"]  # fmt: skip
    assert main(words) == 0, capsys.readouterr().err
    (run,) = runfolder.all_runs()
    assert run.spec().target == "slurm" and run.spec().slurm_cards_per_node == 1
    first = wait_ready(run)
    supervisor = run.status().supervisor  # type: ignore[union-attr]
    assert supervisor is not None
    os.kill(supervisor.pid, signal.SIGKILL)  # the panel's host loses its supervisor; the job runs on
    wait_for(lambda: not supervisor.alive(), 10, "the supervisor to die")
    assert control.resume(run).startswith("re-attached: Slurm job")
    again = wait_for(
        lambda: (
            (i := ready.read(run.path)) is not None and i["ready"] and i["ready_at"] > first["ready_at"] and i
        ),
        120,
        "the new supervisor to find it ready",
    )
    assert again["url"] == first["url"] and again["model"] == first["model"]  # type: ignore[index]
    rec = slurm_record.read(run)
    assert rec is not None
    slurm.run("scontrol", "requeue", str(rec.job_id))
    # the supervisor sees the requeue: the old server is gone, not ready (before the node says anything)
    wait_for(
        lambda: (i := ready.read(run.path)) is not None and not i["ready"], 60, "not ready after the requeue"
    )
    slurm.start_requeued_now(rec.job_id, rec.nodes)
    moved = wait_ready(run)
    assert moved["ready_at"] > again["ready_at"]  # type: ignore[index]
    assert run.status().attempt == 1  # type: ignore[union-attr]  # a requeue is followed, not a new attempt
    status, answer = chat(moved["url"], moved["model"], "Hello")
    assert status == 200 and answer.strip(), answer
    control.stop(run)
    assert wait_done(run, 120) == "stopped", log_tail(run)
