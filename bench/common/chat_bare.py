"""The chat bench's baseline: `model.generate` in a plain process of its own, as a user's script would
run it, with torch's thread count pinned to the engine's.

It was in the bench's own process, where the headless app's threads (the host row, the Devices
feed, Textual's output thread) took the GIL from its decode loop: a baseline slowed by the very
screen it is compared with. A child of its own has the machine as the engine has it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil

from common.chat_probes import process_cpu_s

CHILD = r"""
import json, sys, time
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from gaudi_tui.core.chat.options import GenerationParams
from gaudi_tui.core.demo import resolve_model
device, dtype, threads, prompt = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if device.startswith("hpu"):
    import habana_frameworks.torch.core  # registers the hpu device, as the engine does
torch.set_num_threads(threads)
path = resolve_model("demo")
tokenizer = AutoTokenizer.from_pretrained(path)
model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device).eval()
print(json.dumps({"threads": torch.get_num_threads()}), flush=True)
for line in sys.stdin:
    tokens = int(line)
    times = []
    class Stamp:
        def put(self, value):
            times.append(time.perf_counter())
        def end(self):
            pass
    started = time.perf_counter()
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
    )
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"].to(device)
    params = GenerationParams(max_new_tokens=tokens, min_new_tokens=tokens)
    with torch.inference_mode():
        model.generate(
            input_ids=ids, attention_mask=torch.ones_like(ids), streamer=Stamp(),
            pad_token_id=tokenizer.pad_token_id, **params.generate_kwargs(),
        )
    first, last = times[1], times[-1]  # times[0] is the prompt
    print(json.dumps({
        "ttft": first - started, "tps": (len(times) - 2) / (last - first), "tokens_in": ids.shape[1],
        "decode_s": last - first, "tokens": len(times) - 1,
    }), flush=True)
"""


def default_threads() -> int:
    """torch's own default on this machine (its physical cores it may run on): what the engine gets."""
    return max(1, min(len(os.sched_getaffinity(0)), psutil.cpu_count(logical=False) or 1))


class Bare:
    """The demo model in a child process, the same chat template, prompt and greedy settings, on
    the device and dtype the engine loaded it with (its load report), so the ratio means the same
    thing on a CPU, CUDA or Gaudi host. `run` asks it for one answer and waits for its figures."""

    def __init__(self, device: str, dtype: str, threads: int, prompt: str, root: Path) -> None:
        self.device, self.dtype, self.threads = device, dtype, threads
        env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": str(threads)}
        self.child = subprocess.Popen(
            [sys.executable, "-c", CHILD, device, dtype, str(threads), prompt],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        ready = self._answer()
        if ready.get("threads") != threads:
            raise RuntimeError(f"the bare process runs {ready.get('threads')} torch threads, not {threads}")

    def _answer(self) -> dict[str, float]:
        assert self.child.stdout is not None
        line = self.child.stdout.readline()
        if not line:
            raise RuntimeError(f"the bare model.generate process ended (exit {self.child.wait()})")
        return json.loads(line)

    def run(self, tokens: int) -> dict[str, float]:
        """One answer: ttft (s), tps (decode tok/s), tokens_in, decode_s, tokens; and cpu_s, the
        child's CPU seconds over the whole answer."""
        assert self.child.stdin is not None
        began = process_cpu_s(self.child.pid)
        self.child.stdin.write(f"{tokens}\n")
        self.child.stdin.flush()
        out = self._answer()
        out["cpu_s"] = process_cpu_s(self.child.pid) - began
        return out

    def close(self) -> None:
        self.child.kill()
        self.child.wait()
