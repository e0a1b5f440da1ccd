"""A real `transformers serve` with the demo model on CPU, started through the job life cycle: headless
`gaudi-tui serve demo`, ready detected from /health and /v1/models into serve.json and the job list,
an answer streamed, `s` drains (a request in flight is answered) and the job ends stopped; a port
already in use fails the job with the fix; a LoRA job is served as a merged copy that knows what it
was taught."""

from __future__ import annotations

import json
import re
import socket
import subprocess

import pytest

from gaudi_tui.core.jobs import control, runfolder, supervisor
from gaudi_tui.core.jobs.monitor import Monitor
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import from_mapping, preset
from gaudi_tui.core.serve import ready
from gaudi_tui.ui.screens.training import cluster_nodes
from tests.chat.conftest import FACT_MARK, FACT_QUESTION, TrainedRun
from tests.conftest import CPU, PYTHON, child_env
from tests.jobs.conftest import log_tail, wait_done, wait_for
from tests.serve.conftest import chat, need_serving, open_stream, wait_ready

need_serving()


def serve_demo_headless() -> RunFolder:
    out = subprocess.run(
        [PYTHON, "-m", "gaudi_tui", "serve", "demo", "--device", "cpu"],
        capture_output=True, text=True, env=child_env(), timeout=120, check=True,
    )  # fmt: skip
    found = re.search(r"started job (\S+)", out.stdout)
    assert found, out.stdout + out.stderr
    return runfolder.find(found.group(1))


def listening() -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


@pytest.mark.slow
def test_gaudi_tui_serve_demo_becomes_ready_answers_and_drains_on_stop() -> None:
    run = serve_demo_headless()
    info = wait_ready(run)
    assert info["url"].startswith("http://127.0.0.1:") and info["engine"] == "transformers"
    assert info["api_key_env"] == "" and info["ready_at"] is not None
    assert info["model"] == run.spec().serve_model or info["model"].endswith("demo/model")
    row = next(v for v in Monitor().poll() if v.id == run.id)
    assert (
        row.kind == "serve" and row.state == "running" and row.where == f"ready: {info['url']} (transformers)"
    )
    status, streamed = chat(info["url"], info["model"], "Hello", stream=True)
    assert status == 200 and streamed.strip(), streamed
    status, _ = chat(info["url"], "another-model", "Hello")
    assert status == 400  # pinned to the model it serves: serve.json names the one it answers to
    # the job's details: a server that exports no /metrics (transformers serve answers 404) says so
    assert cluster_nodes(run) == "server   the server exports no metrics (no vLLM figures on /metrics)"

    stream = open_stream(info["url"], info["model"], "Tell me a story", max_tokens=200)
    first = stream.readline()
    while not first.startswith(b"data: "):
        first = stream.readline()
    control.stop(run)  # s: SIGINT while it answers; it finishes the answer, then exits
    wait_for(lambda: run.status().state == "stopping" or "SIGINT" in run.log_path.read_text(), 30, "the stop")
    chunks = [
        json.loads(line[6:]) for line in stream.read().decode().splitlines() if line.startswith("data: {")
    ]
    assert len(chunks) > 2  # the answer went on after the stop
    assert chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length"), chunks[-1]  # to its end
    assert wait_done(run, 120) == "stopped", log_tail(run)
    # SIGINT drains; after a request `transformers serve` (5.24) prints "Finished server process" but
    # its interpreter does not exit, so SIGTERM, kill_grace_s later, ends it: never SIGKILL
    assert run.status().error in ("stopped by SIGINT", "stopped by SIGTERM")
    assert "Finished server process" in run.log_path.read_text()
    after = ready.read(run.path)
    assert after is not None and after["ready"] is False
    assert not ready.probe(info["url"], info["model"])  # nothing answers there any more
    with pytest.raises(control.JobControlError, match="start it again with `gaudi-tui train .*spec.toml`"):
        control.resume(run)


@pytest.mark.slow
def test_a_port_in_use_at_start_fails_the_job_with_its_fix() -> None:
    holder = listening()  # taken after the check passed: the server itself finds it in use
    try:
        port = holder.getsockname()[1]
        spec, problems = control.check(from_mapping({"device": "cpu"}, base=preset("serve a model")), CPU)
        assert problems == []
        from dataclasses import replace

        run = runfolder.create(replace(spec, serve_port=port), "cpu")
        supervisor.start(run, env=child_env())
        assert wait_done(run, 180) == "failed", log_tail(run)
    finally:
        holder.close()
    error = run.status().error or ""
    assert "address already in use" in error and "fix: the port is in use" in error, error
    assert "port 0 for a free one" in error


def test_a_port_in_use_is_refused_before_anything_starts() -> None:
    holder = listening()
    try:
        port = holder.getsockname()[1]
        spec = from_mapping({"device": "cpu", "serve_port": port}, base=preset("serve a model"))
        _, problems = control.check(spec, CPU)
    finally:
        holder.close()
    assert [p.field for p in problems] == ["serve_port"]
    assert f"port {port} on 127.0.0.1 is in use" in problems[0].message


@pytest.mark.slow
def test_a_lora_job_is_served_merged_once_and_answers_what_it_was_taught(
    lora_run: TrainedRun,
) -> None:
    """The LoRA job's run folder (its own runs folder is the chat tests' session one: a serve job is
    not added there; serving by id is tests/serve/test_served_model.py's)."""
    spec = from_mapping({"device": "cpu", "serve_model": str(lora_run.path)}, base=preset("serve a model"))
    run = control.submit(spec, CPU, env=child_env(HF_HUB_OFFLINE="1"))
    try:
        info = wait_ready(run)
        merged = run.path / "merged"
        assert info["model"] == str(merged) and (merged / ".merged").is_file()
        assert json.loads((merged / "config.json").read_text())["architectures"] == ["Qwen3ForCausalLM"]
        assert not (merged / "adapter_config.json").exists()  # a whole model, not an adapter
        status, answer = chat(info["url"], info["model"], FACT_QUESTION, max_tokens=32)
        assert status == 200 and FACT_MARK in answer, answer
    finally:
        control.stop(run)
        wait_done(run, 120)
    assert "merging the adapter" in run.log_path.read_text()
