"""Chat speed: the pane's path vs. bare `model.generate`, same model, prompt and settings, same run.

Pane: the real Chat screen, headless — the prompt is typed into its input and sent; the answer
comes from the engine child over the JSON-lines pipe, read by the client in the screen's worker.
Its figures are the ones the pane records with each answer (time to first token from the send;
decode rate from token arrival times). Bare: `model.generate` in this process with a streamer
that timestamps each token. Both greedy with a fixed answer length; runs alternate; median of N.
Targets: decode ratio ≥ 0.95, TTFT overhead ≤ 50 ms. Also prints how long Esc takes to stop.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUNS = 7
STOP_RUNS = 5
PROMPT = "What is hl-smi?"
NEW_TOKENS = 128


def params():  # noqa: ANN201 - imported late to keep the module light
    from gaudi_tui.core.chat.options import GenerationParams

    return GenerationParams(max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS)


class Bare:
    """The baseline: the demo model in this process, the same chat template and settings."""

    def __init__(self) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from gaudi_tui.core.demo import resolve_model

        path = resolve_model("demo")
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype="float32", device_map="cpu").eval()

    def run(self) -> tuple[float, float, int]:
        """(ttft_s, decode tok/s, tokens_in) of one answer."""
        import torch

        times: list[float] = []

        class Stamp:
            def put(self, value: object) -> None:
                times.append(time.perf_counter())

            def end(self) -> None:
                pass

        started = time.perf_counter()
        text = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": PROMPT}], tokenize=False, add_generation_prompt=True
        )
        ids = self.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        with torch.inference_mode():
            self.model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                streamer=Stamp(),
                pad_token_id=self.tokenizer.pad_token_id,
                **params().generate_kwargs(),
            )
        first, last = times[1], times[-1]  # times[0] is the prompt
        return first - started, (len(times) - 2) / (last - first), ids.shape[1]


async def pane(bare: Bare) -> dict[str, list[float]]:
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.ui.app import GaudiApp
    from gaudi_tui.ui.screens.chat import ChatScreen

    results: dict[str, list[float]] = {
        k: [] for k in ("pane_ttft", "pane_tps", "bare_ttft", "bare_tps", "stop")
    }
    cpu = Accelerator("cpu", "bench")
    app = GaudiApp(accelerator=cpu, hostname="bench")
    async with app.run_test(size=(100, 30)) as pilot:

        async def wait(ready) -> None:  # noqa: ANN001
            deadline = time.monotonic() + 120
            while not ready():
                if time.monotonic() > deadline:
                    raise RuntimeError("the Chat screen did not finish in time")
                await asyncio.sleep(0.005)

        await pilot.press("3")
        screen = app.screen
        assert isinstance(screen, ChatScreen) and screen.store is not None
        store = screen.store

        async def ask() -> None:
            await pilot.press("escape", "n")  # a fresh conversation: the same prompt every run
            await wait(
                lambda: (
                    not store.messages(screen.current().id)
                    and screen.focused is not None
                    and screen.focused.id == "chat-input"
                )
            )
            store.set_params(screen.current().id, params())
            await pilot.press(*PROMPT, "enter")

        await ask()  # load the engine (and warm it up); not measured
        await wait(lambda: screen.engine_state == "ready" and screen.live is None)
        for _ in range(RUNS):
            await ask()
            await wait(lambda: screen.live is None and len(store.messages(screen.current().id)) == 2)
            await wait(lambda: store.messages(screen.current().id)[-1].metrics is not None)
            metrics = store.messages(screen.current().id)[-1].metrics
            assert metrics is not None and metrics.tokens_out == NEW_TOKENS, metrics
            results["pane_ttft"].append(metrics.ttft_s or 0.0)
            results["pane_tps"].append(metrics.decode_tps or 0.0)
            ttft, tps, tokens_in = bare.run()
            assert tokens_in == metrics.tokens_in, "pane and bare must see the same prompt"
            results["bare_ttft"].append(ttft)
            results["bare_tps"].append(tps)
        for _ in range(STOP_RUNS):
            await ask()
            await wait(lambda: screen.live is not None and len(screen.live.text) > 10)
            pressed = time.perf_counter()
            await pilot.press("escape")
            await wait(lambda: screen.live is None)
            results["stop"].append(time.perf_counter() - pressed)
            assert store.messages(screen.current().id)[-1].status == "partial"
    return results


def main() -> int:
    os.environ["GAUDI_TUI_HOME"] = tempfile.mkdtemp(prefix="gaudi-tui-bench-")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    bare = Bare()
    bare.run()  # warm up the baseline the way the engine warms up
    r = asyncio.run(pane(bare))
    med = {k: statistics.median(v) for k, v in r.items()}
    ratio = med["pane_tps"] / med["bare_tps"]
    overhead_ms = (med["pane_ttft"] - med["bare_ttft"]) * 1000
    print(f"demo model, greedy, {NEW_TOKENS} new tokens, median of {RUNS} (alternating runs)")
    print(f"decode: pane {med['pane_tps']:.1f} tok/s, bare model.generate {med['bare_tps']:.1f} tok/s")
    print(f"ratio {ratio:.3f} (target ≥ 0.95)")
    print(
        f"time to first token: pane {med['pane_ttft'] * 1000:.1f} ms, bare {med['bare_ttft'] * 1000:.1f} ms, "
        f"overhead {overhead_ms:.1f} ms (target ≤ 50 ms)"
    )
    print(
        f"Esc to stopped answer: median {med['stop'] * 1000:.0f} ms, max {max(r['stop']) * 1000:.0f} ms "
        f"of {STOP_RUNS} (target ≤ 200 ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
