"""Chat speed: the pane's path vs. bare `model.generate`, same model, prompt and settings, same run.

Path (the target): the engine child + the JSON-lines pipe + a worker thread calling
`EngineClient.generate`, exactly as the Chat screen's worker does. Screen: the whole Chat screen,
headless — the prompt typed into its input, the answer streamed into it and drawn as Markdown
when it ends; on a 2-core machine its drawing takes CPU from the engine, so it is printed too,
with the CPU the screen's main thread used while the answer decoded (stamped as each text
reached the client: a figure the machine's load hardly moves). Screen in tmux: the panel itself
(`python -m gaudi_tui`) in a real tmux pane at 100×30, driven by keys, its figures read from its
store, with the UI process's CPU per answer. The figures are the ones the pane records with each
answer: time to first token from the send, decode rate from token arrival times. Bare:
`model.generate` in this process with a streamer that timestamps each token. All greedy with a
fixed answer length; each measured run is followed at once by a bare run and the pairs are
compared (median of N, with min–max, and the load average). Targets: decode ratio ≥ 0.98 on the
pane's path and ≥ 0.97 for the whole screen (headless and in tmux), TTFT overhead ≤ 50 ms, stop
≤ 200 ms. Exit 1 only when it could not measure.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
from common.chat_probes import DecodeWindow, Tmux, process_cpu_s  # noqa: E402

RUNS = 9
STOP_RUNS = 5
STOP_ATTEMPTS = 15
"""A stop run whose answer finished before the stop arrived is counted apart and tried again."""
PROMPT = "What is hl-smi?"
NEW_TOKENS = 128
STOP_TOKENS = 230  # within the demo model's 256 positions
TMUX_WAIT_S = 120.0
"""The longest the tmux run waits for a screen or an answer."""
EMPTY = "No messages yet"
"""What the Chat screen shows in an empty conversation."""
WINDOW = DecodeWindow()


def params(tokens: int = NEW_TOKENS):  # noqa: ANN201 - imported late to keep the module light
    from gaudi_tui.core.chat.options import GenerationParams

    return GenerationParams(max_new_tokens=tokens, min_new_tokens=tokens)


class Bare:
    """The baseline: the demo model in this process, the same chat template and settings, on the
    device and dtype the engine loaded it with (its load report), so the ratio means the same thing
    on a CPU, CUDA or Gaudi host."""

    def __init__(self, device: str, dtype: str) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from gaudi_tui.core.demo import resolve_model

        if device.startswith("hpu"):
            import habana_frameworks.torch.core  # noqa: F401 - registers the hpu device, as the engine does
        path = resolve_model("demo")
        self.device, self.dtype = device, dtype
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        self.model = model.to(device).eval()

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
        ids = self.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"].to(self.device)
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
    from textual import events

    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.ui.app import GaudiApp
    from gaudi_tui.ui.screens.chat import ChatScreen

    results = empty_results()
    cpu = Accelerator("cpu", "bench")
    app = GaudiApp(accelerator=cpu, hostname="bench")
    async with app.run_test(size=(100, 30)) as pilot:

        async def wait(ready) -> None:  # noqa: ANN001
            deadline = time.monotonic() + 120
            while not ready():
                if time.monotonic() > deadline:
                    status = screen.query_one("#chat-status").render()
                    raise RuntimeError(f"the Chat screen did not finish in time: {status}")
                await asyncio.sleep(0.02)  # cheap checks, seldom: the bench must not eat the engine's CPU

        await pilot.press("3")
        screen = app.screen
        assert isinstance(screen, ChatScreen) and screen.store is not None
        store = screen.store

        async def ask(tokens: int = NEW_TOKENS) -> asyncio.Task:
            """Type the prompt in a fresh conversation and send it; returns the key press of Enter as
            a task, because Pilot waits for the screen to go idle, and a fast engine can finish the
            whole answer inside that wait."""
            await pilot.press("escape", "n")  # a fresh conversation: the same prompt every run
            await wait(
                lambda: (
                    not store.messages(screen.current().id)
                    and screen.focused is not None
                    and screen.focused.id == "chat-input"
                )
            )
            store.set_params(screen.current().id, params(tokens))
            await pilot.press(*PROMPT)
            return asyncio.ensure_future(pilot.press("enter"))

        await (await ask())  # load the engine (and warm it up); not measured
        await wait(lambda: screen.engine_state == "ready" and screen.live is None)

        def answered() -> bool:
            """The answer is stored (a fast engine can finish between two checks of `live`). The
            store is read only once the answer has ended: the bench must not eat the pane's CPU."""
            if screen.live is not None:
                return False
            messages = store.messages(screen.current().id)
            return len(messages) == 2 and messages[-1].status == "complete"

        for _ in range(RUNS):
            await (await ask())
            await wait(answered)
            metrics = store.messages(screen.current().id)[-1].metrics
            assert metrics is not None and metrics.tokens_out == NEW_TOKENS, metrics
            results["ui_cpu"].append(WINDOW.cpu_s())
            record(results, metrics, bare)
        attempts = 0
        while len(results["stop"]) < STOP_RUNS and attempts < STOP_ATTEMPTS:
            attempts += 1
            sent = await ask(STOP_TOKENS)  # the longest answer the demo model's context allows
            await wait(lambda: screen.live is not None and bool(screen.live.text))  # the first token is shown
            pressed = time.perf_counter()
            # The key goes straight into the app's queue, as a terminal's would: Pilot's press waits for
            # the screen to go idle first, and a fast answer could finish in that wait.
            app.post_message(events.Key("escape", None))
            await sent
            await wait(lambda: screen.live is None)
            if store.messages(screen.current().id)[-1].status == "partial":
                results["stop"].append(time.perf_counter() - pressed)
            else:
                results["finished_before_stop"].append(1.0)
    return results


def record(results: dict[str, list[float]], metrics, bare: Bare) -> None:  # noqa: ANN001
    """One measured answer, then a bare run at once."""
    assert metrics is not None and metrics.tokens_out == NEW_TOKENS, metrics
    results["ttft"].append(metrics.ttft_s or 0.0)
    results["tps"].append(metrics.decode_tps or 0.0)
    ttft, tps, tokens_in = bare.run()
    assert tokens_in == metrics.tokens_in, "both must see the same prompt"
    results["bare_ttft"].append(ttft)
    results["bare_tps"].append(tps)


def empty_results() -> dict[str, list[float]]:
    keys = ("ttft", "tps", "bare_ttft", "bare_tps", "stop", "finished_before_stop", "ui_cpu")
    return {k: [] for k in keys}


def worker_path(client, bare: Bare) -> dict[str, list[float]]:  # noqa: ANN001 - EngineClient
    """Engine + pipe + a worker thread, as the screen runs them (no rendering)."""

    from gaudi_tui.core.chat.client import Answer

    results = empty_results()
    messages = [{"role": "user", "content": PROMPT}]

    def in_worker(cancel_after_text: bool = False) -> tuple[Answer, float]:
        box: list[Answer] = []
        stop_at: list[float] = []

        def on_text(text: str) -> None:
            if cancel_after_text and not stop_at:
                stop_at.append(time.perf_counter())
                client.stop()

        tokens = STOP_TOKENS if cancel_after_text else NEW_TOKENS
        worker = threading.Thread(
            target=lambda: box.append(client.generate(messages, params(tokens), on_text=on_text))
        )
        worker.start()
        worker.join()
        return box[0], time.perf_counter() - stop_at[0] if stop_at else 0.0

    in_worker()  # the first answer after load, like the pane's; not measured
    for _ in range(RUNS):
        record(results, in_worker()[0].metrics, bare)
    attempts = 0
    while len(results["stop"]) < STOP_RUNS and attempts < STOP_ATTEMPTS:
        attempts += 1
        answer, stop_s = in_worker(cancel_after_text=True)  # stop at the first text
        if answer.stopped:
            results["stop"].append(stop_s)
        else:
            results["finished_before_stop"].append(1.0)
    return results


def spread(values: list[float], fmt: str = ".1f") -> str:
    """median (min–max)"""
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"


def report(
    name: str, r: dict[str, list[float]], stop_what: str | None, target: float, cpu_what: str = ""
) -> None:
    # Comparing within pairs cancels the load other processes put on the machine, which drifts.
    ratios = [p / b for p, b in zip(r["tps"], r["bare_tps"], strict=True)]
    overheads = [(p - b) * 1000 for p, b in zip(r["ttft"], r["bare_ttft"], strict=True)]
    print(f"{name}:")
    print(
        f"  decode {spread(r['tps'])} tok/s, bare model.generate {spread(r['bare_tps'])} tok/s: "
        f"ratio {spread(ratios, '.3f')} (target ≥ {target:.2f})"
    )
    print(
        f"  time to first token {spread([t * 1000 for t in r['ttft']])} ms, "
        f"bare {spread([t * 1000 for t in r['bare_ttft']])} ms: overhead {spread(overheads)} ms (target ≤ 50 ms)"
    )
    if r["ui_cpu"]:
        print(f"  {cpu_what} {spread([c * 1000 for c in r['ui_cpu']])} ms per answer")
    stops, early = r["stop"], len(r["finished_before_stop"])
    note = f"; {early} answer(s) finished before the stop arrived, not counted" if early else ""
    if stop_what is None:
        return
    if stops:
        print(
            f"  {stop_what}: median {statistics.median(stops) * 1000:.0f} ms, min {min(stops) * 1000:.0f} ms, "
            f"max {max(stops) * 1000:.0f} ms over {len(stops)} stops (target ≤ 200 ms){note}"
        )
    else:
        print(f"  {stop_what}: not measured{note}")


def in_tmux(bare: Bare) -> dict[str, list[float]]:
    """The same answers from the panel itself in a tmux pane: keys in, figures from its store."""
    from gaudi_tui.core.chat.store import ChatStore

    results = empty_results()
    tmux = Tmux(TMUX_WAIT_S)
    command = f"exec {shlex.quote(sys.executable)} -m gaudi_tui"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        ["tmux", "-L", tmux.socket, "new-session", "-d", "-s", "panel", "-x", "100", "-y", "30", command],
        env=env,
        check=True,
        timeout=30,
    )
    store: ChatStore | None = None
    try:
        pid = int(tmux.run("display-message", "-p", "-t", "panel", "#{pane_pid}").strip())
        tmux.wait(lambda: "cpu: " in tmux.run("capture-pane", "-p", "-t", "panel"), "its first screen")
        tmux.keys("3")
        tmux.wait(lambda: "Conversations" in tmux.run("capture-pane", "-p", "-t", "panel"), "Chat")
        store = ChatStore()  # the panel's own file, under the bench's GAUDI_TUI_HOME
        measured: set[int] = set()

        def answered() -> bool:
            """The newest conversation (each run starts one) holds a finished answer."""
            newest = max(c.id for c in store.conversations())
            messages = store.messages(newest)
            return newest not in measured and len(messages) == 2 and messages[-1].status != "partial"

        for run in range(RUNS + 1):  # the first loads the engine (and warms it up); not measured
            tmux.keys("Escape")  # the input -> the list (the list at first)
            time.sleep(0.3)  # an Esc followed at once by a key reads as Alt+key
            tmux.keys("n")  # a new conversation (the first one is empty: its input is focused)
            tmux.wait(lambda: EMPTY in tmux.run("capture-pane", "-p", "-t", "panel"), "a new conversation")
            newest_id = max(c.id for c in store.conversations())
            while store.conversation(newest_id).params != params():  # as the headless run does; the
                store.set_params(newest_id, params())  # panel writes its own back once it has drawn them
                time.sleep(0.3)  # its input takes the focus just after it is drawn
            tmux.keys(PROMPT, literal=True)
            time.sleep(0.3)
            began = process_cpu_s(pid)
            tmux.keys("Enter")
            tmux.wait(answered, "the answer")
            cpu = process_cpu_s(pid) - began
            newest = max(c.id for c in store.conversations())
            measured.add(newest)
            metrics = store.messages(newest)[-1].metrics
            if run:
                results["ui_cpu"].append(cpu)
                record(results, metrics, bare)
    finally:
        if store is not None:
            store.close()
        tmux.run("kill-server")
    return results


def main() -> int:
    from gaudi_tui.core.chat.client import EngineClient
    from gaudi_tui.core.chat.options import LoadOptions

    os.environ["GAUDI_TUI_HOME"] = tempfile.mkdtemp(prefix="gaudi-tui-bench-")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    client = EngineClient()
    client.start()
    try:
        loaded = client.load(LoadOptions())
        bare = Bare(loaded.device, loaded.dtype)  # the engine's own device and dtype
        bare.run()  # warm up the baseline the way the engine warms up
        path = worker_path(client, bare)
    finally:
        client.shutdown()
    WINDOW.install()
    pane_results = asyncio.run(pane(bare))
    tmux_results = in_tmux(bare) if shutil.which("tmux") else None
    print(
        f"demo model on {bare.device} ({bare.dtype}), greedy, {NEW_TOKENS} new tokens; "
        f"{RUNS} pairs (measured run, then bare), medians"
    )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report("engine + pipe + worker (the pane's path)", path, "stop request to stopped answer", 0.98)
    report(
        "whole Chat screen, headless (rendering included)",
        pane_results,
        "Esc to stopped answer",
        0.97,
        "its main thread's CPU while the answer decoded:",
    )
    if tmux_results is None:
        print("whole Chat screen in tmux: skipped (tmux is not installed)")
    else:
        report(
            "whole Chat screen in tmux 100x30 (`python -m gaudi_tui`, a real terminal)",
            tmux_results,
            None,
            0.97,
            "the UI process's CPU (all threads, Enter to the stored answer):",
        )
    if not path["stop"] or not pane_results["stop"]:
        print("could not measure a stop: every answer finished before its stop arrived", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
