"""Chatting with a trained adapter: decode speed and memory, through the engine (the Chat pane's path).

Speed (decode tokens/s as the pane measures it, greedy, a fixed answer length), ratio to the base
model alone in the same run (served through its own engine too: every row here goes through the
engine's process and protocol; none is a bare `generate` call):
- base + adapter in one engine, the adapter on (a PeftModel answering with its LoRA layers);
- the same engine, the adapter switched off (`disable_adapter`): the base answers;
- the same engine answering both at once (one batch of two rows, one adapter per row): per row;
- the adapter merged into its base (`merge_and_unload`);
- the base model alone in an engine of its own (no adapter loaded).
Memory: one engine serving base and tuned (the base loaded once) against two engines (the tuned
one and the base). CPU: each engine process's USS (the pages only it has: what one more engine
costs) and PSS (shared pages divided among the processes that map them), read with psutil; RSS
would count the pages the engines share (torch, Python) once per engine. Gaudi: HPU InUse; CUDA:
allocated, read inside each engine.

The adapter is a LoRA like the tests train (rank 16 on every linear layer of the demo model),
with random weights: speed does not depend on what it learnt. Medians of N rounds, min–max, and
the load average, since on a shared machine the figures move with it.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common.home import own_home  # noqa: E402

ROUNDS = 5
NEW_TOKENS = 96
PROMPT = [{"role": "user", "content": "What is hl-smi?"}]
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def make_adapter(folder: Path) -> Path:
    """A random rank-16 LoRA on every linear layer of the demo model, saved as training saves one."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from gaudi_tui.core.demo import model_dir

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(str(model_dir()))
    config = LoraConfig(
        task_type="CAUSAL_LM", r=16, lora_alpha=32, target_modules=TARGETS, init_lora_weights=False
    )
    get_peft_model(base, config).save_pretrained(str(folder))
    return folder


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.1f} tok/s  (min {min(values):.1f}, max {max(values):.1f})"


def main() -> int:
    from gaudi_tui.core.chat.client import EngineClient
    from gaudi_tui.core.chat.options import GenerationParams, LoadOptions

    params = GenerationParams(max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS)
    tmp = Path(tempfile.mkdtemp(prefix="gaudi-tui-bench-adapters-"))
    own_home(path=tmp / "home")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    env = {"PYTHONPATH": str(ROOT)}
    adapter = str(make_adapter(tmp / "adapter"))
    loads = {
        "shared": LoadOptions(adapter, compare="base"),
        "tuned": LoadOptions(adapter),
        "merged": LoadOptions(adapter, merge=True),
        "base": LoadOptions("demo"),
    }
    engines: dict[str, EngineClient] = {}
    try:
        for name, options in loads.items():  # one at a time: each load has the CPU to itself
            engine = engines[name] = EngineClient(env=env, log_path=tmp / "engine.log")
            engine.start()
            engine.load(options)
        rates: dict[str, list[float]] = {
            k: [] for k in ("on", "off", "both: tuned", "both: base", "merged", "base")
        }
        for _ in range(ROUNDS):
            rates["on"].append(engines["shared"].generate(PROMPT, params).metrics.decode_tps or 0.0)
            rates["off"].append(
                engines["shared"].generate_rows(PROMPT, params, [1])[0].metrics.decode_tps or 0.0
            )
            tuned, base = engines["shared"].generate_rows(PROMPT, params, [0, 1])
            rates["both: tuned"].append(tuned.metrics.decode_tps or 0.0)
            rates["both: base"].append(base.metrics.decode_tps or 0.0)
            rates["merged"].append(engines["merged"].generate(PROMPT, params).metrics.decode_tps or 0.0)
            rates["base"].append(engines["base"].generate(PROMPT, params).metrics.decode_tps or 0.0)
        memory = {name: engine.stats() for name, engine in engines.items()}
        private = {name: _uss_pss(engine.pid) for name, engine in engines.items()}
    finally:
        for engine in engines.values():
            engine.shutdown()
    alone = statistics.median(rates["base"])
    print(f"chat with an adapter: demo model + rank-16 LoRA, {NEW_TOKENS} tokens, {ROUNDS} rounds")
    labels = {
        "on": "one engine, adapter on",
        "off": "one engine, adapter off (base)",
        "both: tuned": "one engine, both at once: tuned row",
        "both: base": "one engine, both at once: base row",
        "merged": "adapter merged into the base",
        "base": "base model alone (its own engine)",
    }
    for key, label in labels.items():
        ratio = statistics.median(rates[key]) / alone if alone else 0.0
        print(f"  {label:<38} {spread(rates[key])}  ratio to the base alone {ratio:.2f}")
    kind = next((m.kind for m in memory.values() if m), "?")
    if kind == "cpu":
        for index, what in enumerate(("USS", "PSS")):
            _print_memory(what + " of each engine process", {n: u[index] for n, u in private.items()})
    else:
        _print_memory("device memory in use", {n: (m.in_use or 0) if m else 0 for n, m in memory.items()})
    print(
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min), {os.cpu_count()} CPUs"
    )
    return 0


def _uss_pss(pid: int | None) -> tuple[int, int]:
    import psutil

    if pid is None:
        return 0, 0
    info = psutil.Process(pid).memory_full_info()
    return int(info.uss), int(getattr(info, "pss", 0))


def _print_memory(what: str, used: dict[str, int]) -> None:
    two = used["tuned"] + used["base"]
    print(f"memory ({what}):")
    print(f"  one engine serving base and tuned  {used['shared'] / 2**20:7.0f} MiB")
    print(
        f"  two engines (tuned + base)         {two / 2**20:7.0f} MiB "
        f"({used['tuned'] / 2**20:.0f} + {used['base'] / 2**20:.0f}); one/two = {used['shared'] / two:.2f}"
        if two
        else "  two engines: not measured"
    )


if __name__ == "__main__":
    raise SystemExit(main())
