"""Chat engine: what detokenising costs per token, decoded at every token vs once per event.

The engine counts each generated token and decodes only when it sends a token event (the first
token at once, then at most every TOKEN_BATCH_S = 50 ms), so a model producing 100–250 tokens a
second pays one decode per 5–12 tokens. This measures the streamer alone on the demo model's
real byte-level BPE tokenizer and a 128-token paragraph of corpus answers: per-token decoding (how the engine
streamed before) against `TokenStreamer.take` every 1, 5 and 12 tokens, beside counting only.
Medians of 15 runs with min and max, and the load average.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/common
from common.figures import load  # noqa: E402

RUNS = 15
TOKENS = 128


def main() -> int:
    import torch
    from transformers import AutoTokenizer

    from gaudi_tui.core.chat.engine.generation import TokenStreamer
    from gaudi_tui.core.demo import load_corpus, resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("demo"))
    text = " ".join(pair["answer"] for pair in load_corpus()[:8])  # one paragraph, as answers often are
    ids = tokenizer(text, add_special_tokens=False)["input_ids"][:TOKENS]
    steps = [torch.tensor([token]) for token in ids]

    def every_token() -> None:
        """The former streamer: decode the tokens since the last newline after every token."""
        pending: list[int] = []
        for step in steps:
            pending.extend(step.tolist())
            decoded = tokenizer.decode(pending, skip_special_tokens=True)
            if decoded.endswith("\n"):
                pending = []

    def taken_every(n: int) -> Callable[[], None]:
        def run() -> None:
            streamer = TokenStreamer(tokenizer, lambda count: None)
            streamer.put(torch.tensor([[0]]))  # the prompt
            for i, step in enumerate(steps, start=1):
                streamer.put(step)
                if n and i % n == 0:
                    streamer.take()
            streamer.take(final=bool(n))

        return run

    def per_token_us(run: Callable[[], None]) -> list[float]:
        run()  # warm
        times = []
        for _ in range(RUNS):
            started = time.perf_counter()
            run()
            times.append((time.perf_counter() - started) / len(steps) * 1e6)
        return times

    cases = {
        "count only, no decoding": taken_every(0),
        "decode every token (before)": every_token,
        "take every token": taken_every(1),
        "take every 5 tokens": taken_every(5),
        "take every 12 tokens": taken_every(12),
    }
    results = {name: per_token_us(run) for name, run in cases.items()}
    before = statistics.median(results["decode every token (before)"])
    print(f"demo tokenizer, {len(steps)} tokens, median of {RUNS} (µs per token, min–max); {load()}")
    for name, times in results.items():
        median = statistics.median(times)
        print(
            f"  {name:28s} {median:6.1f} µs  ({min(times):.1f}–{max(times):.1f})  "
            f"{median / before:.2f}× the per-token decoding"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
