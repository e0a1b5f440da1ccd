"""`gaudi-tui chat --endpoint`: one answer from an OpenAI-compatible server (a real `transformers
serve`, tests/chat/serving.py), side by side with the panel's own engine, its figures, clear errors."""

from __future__ import annotations

import json

from tests.chat.serving import Server, free_port
from tests.chat.test_command import chat


def test_an_endpoint_streams_json_tokens_then_the_result_saying_who_answered(server: Server) -> None:
    done = chat("--endpoint", server.url, "--prompt", "What is hl-smi?", "--json", "--max-new-tokens", "30")
    assert done.returncode == 0, done.stderr
    *tokens, result = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(tokens) >= 2 and "".join(t["text"] for t in tokens) == result["answer"]
    label = f"{server.model} @ {server.url}"
    assert result["answered_by"]["label"] == label and result["load"]["source"] == server.url
    assert result["metrics"]["tokens_out"] == 30 and result["metrics"]["tokens_in"] > 0
    assert done.stderr.splitlines()[0] == f"loading {server.url}…"
    assert done.stderr.splitlines()[-1].startswith("TTFT ")


def test_an_endpoint_beside_the_panels_own_engine(server: Server) -> None:
    done = chat(
        "--endpoint", server.url, "--compare", "demo", "--prompt", "What is hl-smi?", "--max-new-tokens", "20"
    )
    assert done.returncode == 0, done.stderr
    assert f"== {server.model} @ {server.url}\n" in done.stdout and "\n== demo model\n" in done.stdout
    assert "(two engines)" in done.stderr


def test_figures_say_the_server_exports_none_and_errors_are_clear(server: Server) -> None:
    done = chat("--endpoint", server.url, "--figures")
    assert (done.returncode, done.stdout) == (
        0,
        "the server exports no metrics (no vLLM figures on /metrics)\n",
    )
    port = free_port()
    refused = chat("--endpoint", f"http://127.0.0.1:{port}", "--prompt", "hi")
    assert refused.returncode == 1 and refused.stdout == ""
    assert f"gaudi-tui chat: Cannot reach http://127.0.0.1:{port}: connection refused" in refused.stderr
    wrong = chat("--endpoint", server.url, "--model", "other", "--prompt", "hi")
    assert wrong.returncode == 1 and f"does not serve 'other'; it serves: {server.model}" in wrong.stderr
    assert chat("--figures").returncode == 2 and chat("--endpoint", server.url).returncode == 2
