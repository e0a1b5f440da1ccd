"""Chat over an OpenAI-compatible endpoint: the panel's client against the `openai` client alone,
on the same server, prompt and settings, in the same run.

Server: a real `transformers serve` with the demo model on CPU (tests/chat/serving.py: a copy of it
whose generation config runs every answer to max_tokens, so both sides stream the same number of
tokens). Panel (the target): `EndpointClient.generate` in a worker thread, exactly as the Chat
screen's worker calls it, its figures the ones the pane records (TTFT from the send, decode rate
from chunk arrival times and the server's usage count). Baseline: the `openai` client's streaming
`chat.completions.create` in this process with the same request, its figures computed the same
way. The baseline keeps its HTTP connection alive between answers (httpx's pool) while the panel
opens one per answer (loopback: well under a millisecond): that edge is the baseline's, left in.
Both greedy (temperature 0). One untimed answer each first; then pairs whose order swaps, the
ratio taken within each pair (median, min–max, load average), and the CPU this process spent per
answer on each side (what a loaded machine hardly moves). Targets: decode ratio ≥ 0.98, TTFT
overhead printed (≤ 10 ms expected). Exit 1 only when it could not measure.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common.figures import load, spread  # noqa: E402
from bench.common.home import own_home  # noqa: E402

PAIRS = 9
PROMPT = "What is hl-smi?"
NEW_TOKENS = 200
"""Within the demo model's 256 positions, with the prompt."""
TARGET = 0.98


def panel(client, params) -> tuple[float, float, float]:  # noqa: ANN001
    """(ttft_s, decode tok/s, client CPU s) of one answer through the panel's client, in a worker thread."""
    from gaudi_tui.core.chat.client import Answer

    result: list[Answer] = []
    cpu = time.process_time()
    worker = threading.Thread(
        target=lambda: result.append(client.generate([{"role": "user", "content": PROMPT}], params))
    )
    worker.start()
    worker.join()
    cpu = time.process_time() - cpu
    metrics = result[0].metrics
    assert metrics.tokens_out == NEW_TOKENS and metrics.ttft_s and metrics.decode_tps, metrics
    return metrics.ttft_s, metrics.decode_tps, cpu


def baseline(openai_client, model: str) -> tuple[float, float, float]:  # noqa: ANN001
    """(ttft_s, decode tok/s, client CPU s) of the same answer through the `openai` client alone."""
    first = last = None
    tokens = 0
    cpu = time.process_time()
    sent = time.perf_counter()
    stream = openai_client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": PROMPT}],
        max_tokens=NEW_TOKENS,
        temperature=0.0,
        stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in stream:
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
        if chunk.choices and chunk.choices[0].delta.content:
            now = time.perf_counter()
            first = now if first is None else first
            last = now
    cpu = time.process_time() - cpu
    assert tokens == NEW_TOKENS and first is not None and last is not None and last > first
    return first - sent, (tokens - 1) / (last - first), cpu


def main() -> int:
    from openai import OpenAI

    from gaudi_tui.core.chat.endpoint import EndpointClient
    from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
    from gaudi_tui.core.demo import resolve_model
    from tests.chat.serving import long_answer_model, start_server

    own_home()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    folder = Path(tempfile.mkdtemp(prefix="gaudi-tui-bench-serve-"))
    try:
        server = start_server(long_answer_model(Path(resolve_model("demo")), folder), folder / "serve.log")
    except RuntimeError as exc:
        print(f"could not start transformers serve: {exc}", file=sys.stderr)
        return 1
    try:
        client = EndpointClient(server.url)
        client.load(LoadOptions(endpoint=server.url, model=""))
        params = GenerationParams(max_new_tokens=NEW_TOKENS)
        bare = OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0)
        panel(client, params)  # warm-ups, untimed: the server's first request, imports, the pool
        baseline(bare, server.model)
        ours: list[tuple[float, float, float]] = []
        theirs: list[tuple[float, float, float]] = []
        for pair in range(PAIRS):
            if pair % 2 == 0:
                ours.append(panel(client, params))
                theirs.append(baseline(bare, server.model))
            else:
                theirs.append(baseline(bare, server.model))
                ours.append(panel(client, params))
    finally:
        server.stop()
    ratios = [a[1] / b[1] for a, b in zip(ours, theirs, strict=True)]
    overheads = [(a[0] - b[0]) * 1000 for a, b in zip(ours, theirs, strict=True)]
    print(
        f"transformers serve, demo model on CPU, greedy, {NEW_TOKENS} tokens; "
        f"{PAIRS} pairs (order swapped every pair), medians"
    )
    print(load())
    print(f"panel's client (EndpointClient, worker thread): {spread([r[1] for r in ours], '{:.1f}')} tok/s")
    print(f"openai client alone:                            {spread([r[1] for r in theirs], '{:.1f}')} tok/s")
    met = "met" if statistics.median(ratios) >= TARGET else "NOT met"
    print(f"  decode ratio panel/openai: {spread(ratios, '{:.3f}')} (target ≥ {TARGET}: {met})")
    print(
        f"  TTFT panel {spread([a[0] * 1000 for a in ours], '{:.1f}')} ms, "
        f"openai {spread([b[0] * 1000 for b in theirs], '{:.1f}')} ms"
    )
    print(f"  TTFT overhead (panel − openai, within a pair): {spread(overheads, '{:+.1f}')} ms")
    print(
        f"  client CPU per answer (this process, the server apart): panel {spread([r[2] * 1000 for r in ours], '{:.1f}')} ms, "
        f"openai {spread([r[2] * 1000 for r in theirs], '{:.1f}')} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
