"""`gaudi-tui chat`: one answer streamed to stdout, JSON lines with --json, clear errors."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import PYTHON, child_env, host_accelerator


def chat(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "gaudi_tui", "chat", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=180,
    )


def test_json_streams_tokens_then_the_result_with_metrics() -> None:
    done = chat("--prompt", "-", "--json", "--max-new-tokens", "40", stdin="What is hl-smi?\n")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    *tokens, result = lines
    # the first token goes out alone, the rest in batches of up to 50 ms: at least two events
    assert len(tokens) >= 2 and all(t["type"] == "token" for t in tokens)
    assert result["type"] == "result"
    assert "".join(t["text"] for t in tokens) == result["answer"]
    assert "hl-smi" in result["answer"]
    metrics = result["metrics"]
    assert (
        metrics["tokens_out"] > 0
        and metrics["ttft_s"] > 0
        and metrics["memory"]["kind"] == host_accelerator().kind
    )
    assert result["load"]["label"] == "demo model" and result["load"]["warmup_s"] > 0
    # stderr holds our three lines only: the engine's own output went to its log file
    loading, loaded, summary = done.stderr.splitlines()
    assert (loading, loaded[:30]) == ("loading demo…", "loaded: demo model · cpu float")
    assert summary.startswith("TTFT ")


def test_missing_model_folder_is_a_clear_error(tmp_path) -> None:
    done = chat("--model", str(tmp_path / "nope"), "--prompt", "hi")
    assert done.returncode == 1
    assert done.stdout == ""
    assert f"gaudi-tui chat: {tmp_path / 'nope'} does not exist" in done.stderr


def test_empty_prompt_and_bad_parameters_are_usage_errors() -> None:
    assert chat("--prompt", "-", stdin="  \n").returncode == 2
    bad = chat("--prompt", "hi", "--top-p", "3")
    assert bad.returncode == 2 and "top_p must be above 0 and at most 1" in bad.stderr
