"""Chat speed: the pane's path vs. bare `model.generate`, same model, prompt and settings, same run.

Path (the target): the engine child + the JSON-lines pipe + a worker thread calling
`EngineClient.generate`, as the Chat screen's worker does. Screen: the whole Chat screen, headless —
the prompt typed into its input, the answer streamed into it and drawn as Markdown when it ends,
with the CPU its main thread used while the answer decoded (stamped as each text reached the
client) and the frames drawn meanwhile. Screen in tmux: the panel itself (`python -m gaudi_tui`)
in a tmux pane at 100×30, driven by keys, its figures read from its store, with the UI process's CPU
per answer. Time to first token: from the send to its arrival (the pane's own figure). Decode
rate: on the pane's path and in tmux the pane's own figure, from the engine's stamps of when it made
its tokens, as the bare side's streamer stamps them; for the whole screen headless (the headline) the
tokens reaching the screen, stamped at each frame drawn (`bench/common/chat_drawn.py`), the engine's
pace printed beside; the engine's CPU counts from before Enter (Pilot's press can return after the
whole answer). The tmux part's rate is the engine's pace, not the terminal's: reading the pane at
each frame would take the cores the panel draws with.
Bare: `model.generate` in a process of its own (`bench/common/chat_bare.py`). CPU per answer beside.

Fair and steady (docs/benches.md): every answer is NEW_TOKENS long, greedy (the demo model's 256
positions allow no more: ~0.5 s an answer; 128-token answers took ~0.3 s, about one frame, and
their pairs ranged 0.55–1.9 in one run); torch's threads are the same on both sides (`--threads`,
by default torch's own default here, what a user's engine gets: the engine inherits
OMP_NUM_THREADS, the bare process sets it and says so; one thread each would leave a core free for
the screen, easier than the real thing); each side answers WARMUPS times untimed first; PAIRS
pairs, measured then bare and bare then measured in turn, each run starting on an idle screen;
ratios per pair, median (min–max), and the load average. Targets: decode ratio ≥ 0.98 on the
pane's path and ≥ 0.97 for the whole screen (headless and in tmux), TTFT overhead ≤ 50 ms, stop
≤ 200 ms. Exit 1 only when it could not measure."""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
from common.chat_bare import Bare, default_threads  # noqa: E402
from common.chat_drawn import DrawnAnswer  # noqa: E402
from common.chat_probes import DecodeWindow, Tmux, engine_pid, process_cpu_s, settle  # noqa: E402
from common.chat_report import report  # noqa: E402
from common.home import own_home  # noqa: E402

PAIRS = 15
WARMUPS = 2
"""Untimed answers on each side before its pairs (the engine's load also ends with one of its own)."""
STOP_RUNS = 5
STOP_ATTEMPTS = 15
"""A stop run whose answer finished before the stop arrived is counted apart and tried again."""
PROMPT = "What is hl-smi?"
NEW_TOKENS = 224
STOP_TOKENS = 230  # within the demo model's 256 positions
TMUX_WAIT_S = 120.0  # the longest the tmux run waits for a screen or an answer
EMPTY = "No messages yet"
"""What the Chat screen shows in an empty conversation."""
WINDOW = DecodeWindow()
DRAWN = DrawnAnswer()


def params(tokens: int = NEW_TOKENS):  # noqa: ANN201 - imported late to keep the module light
    from gaudi_tui.core.chat.options import GenerationParams

    return GenerationParams(max_new_tokens=tokens, min_new_tokens=tokens)


async def pane(bare: Bare, pairs: int) -> dict[str, list[float]]:
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

        async def ask(tokens: int = NEW_TOKENS, before=lambda: None) -> asyncio.Task:  # noqa: ANN001
            """Type the prompt in a fresh conversation, call `before`, and send it; returns the key
            press of Enter as a task, because Pilot waits for the screen to go idle, and a fast engine
            can finish the whole answer inside that wait."""
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
            await pilot.pause()  # typed and drawn: the answer starts on an idle screen
            before()  # what counts starts before the key: the answer may end inside Pilot's press
            return asyncio.ensure_future(pilot.press("enter"))

        def answered() -> bool:
            """The answer is stored (a fast engine can finish between two checks of `live`). The
            store is read only once the answer has ended: the bench must not eat the pane's CPU."""
            if screen.live is not None:
                return False
            messages = store.messages(screen.current().id)
            return len(messages) == 2 and messages[-1].status == "complete"

        async def measured() -> tuple[object, float, float]:
            """An answer's metrics, the engine's CPU from before Enter to the stored answer, and the
            rate its tokens reached the screen (`DrawnAnswer`)."""
            pid = screen.client.pid if screen.client is not None else None
            began: list[float] = []
            await (await ask(before=lambda: (DRAWN.arm(), began.append(process_cpu_s(pid) if pid else 0.0))))
            await wait(answered)
            used = process_cpu_s(pid) - began[0] if pid else 0.0
            await wait(DRAWN.complete)  # the whole answer on the screen
            await pilot.pause()  # the finished answer drawn before anything else runs
            return store.messages(screen.current().id)[-1].metrics, used, DRAWN.rate()

        for _ in range(WARMUPS + 1):  # the first loads the engine (and warms it up); not measured
            await measured()
        for i in range(pairs):
            if i % 2:
                answer = bare.run(NEW_TOKENS)
            metrics, engine_cpu, drawn = await measured()
            results["ui_cpu"].append(WINDOW.cpu_s())
            results["frames"].append(WINDOW.made("frames"))
            results["layouts"].append(WINDOW.made("layouts"))
            if not i % 2:
                answer = bare.run(NEW_TOKENS)
            record(results, metrics, engine_cpu, answer, drawn)
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


def record(
    results: dict[str, list[float]],
    metrics,
    engine_cpu: float,
    bare: dict[str, float],
    drawn: float | None = None,  # noqa: ANN001
) -> None:
    """One pair: a measured answer's figures and the bare answer's. With `drawn` (the whole screen,
    headless) the decode rate is the screen's, the engine's own pace beside it."""
    assert metrics is not None and metrics.tokens_out == NEW_TOKENS, metrics
    assert bare["tokens_in"] == metrics.tokens_in, "both must see the same prompt"
    results["ttft"].append(metrics.ttft_s or 0.0)
    results["tps"].append((metrics.decode_tps or 0.0) if drawn is None else drawn)
    if drawn is not None:
        results["engine_tps"].append(metrics.decode_tps or 0.0)
    results["engine_cpu"].append(engine_cpu)
    results["bare_ttft"].append(bare["ttft"])
    results["bare_tps"].append(bare["tps"])
    results["bare_cpu"].append(bare["cpu_s"])


def empty_results() -> dict[str, list[float]]:
    keys = ("ttft", "tps", "bare_ttft", "bare_tps", "stop", "finished_before_stop", "ui_cpu")
    return {k: [] for k in (*keys, "engine_tps", "engine_cpu", "bare_cpu", "frames", "layouts")}


def worker_path(client, bare: Bare, pairs: int) -> dict[str, list[float]]:  # noqa: ANN001 - EngineClient
    """Engine + pipe + a worker thread, as the screen runs them (no rendering)."""

    from gaudi_tui.core.chat.client import Answer

    results = empty_results()
    messages = [{"role": "user", "content": PROMPT}]

    def in_worker(cancel_after_text: bool = False) -> tuple[Answer, float, float]:
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
        began = process_cpu_s(client.pid)
        worker.start()
        worker.join()
        used = process_cpu_s(client.pid) - began
        return box[0], time.perf_counter() - stop_at[0] if stop_at else 0.0, used

    for _ in range(WARMUPS):  # the first answers after load, like the pane's; not measured
        in_worker()
    for i in range(pairs):
        if i % 2:
            answer = bare.run(NEW_TOKENS)
        measured, _, engine_cpu = in_worker()
        if not i % 2:
            answer = bare.run(NEW_TOKENS)
        record(results, measured.metrics, engine_cpu, answer)
    attempts = 0
    while len(results["stop"]) < STOP_RUNS and attempts < STOP_ATTEMPTS:
        attempts += 1
        stopped, stop_s, _ = in_worker(cancel_after_text=True)  # stop at the first text
        if stopped.stopped:
            results["stop"].append(stop_s)
        else:
            results["finished_before_stop"].append(1.0)
    return results


def in_tmux(bare: Bare, pairs: int) -> dict[str, list[float]]:
    """The same answers from the panel itself in a tmux pane: keys in, figures from its store."""
    from gaudi_tui.core.chat.store import ChatStore

    results = empty_results()
    tmux = Tmux(TMUX_WAIT_S)
    command = f"exec {shlex.quote(sys.executable)} -m gaudi_tui"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    session = ["new-session", "-d", "-s", "panel", "-x", "100", "-y", "30", command]
    subprocess.run(["tmux", "-L", tmux.socket, *session], env=env, check=True, timeout=30)
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

        def one_answer() -> tuple[object, float, float]:
            """(metrics, the UI process's CPU, the engine's CPU) of one answer."""
            tmux.keys("Escape")  # the input -> the list (the list at first)
            time.sleep(0.3)  # an Esc followed at once by a key reads as Alt+key
            tmux.keys("n")  # a new conversation (the first one is empty: its input is focused)
            tmux.wait(lambda: EMPTY in tmux.run("capture-pane", "-p", "-t", "panel"), "a new conversation")
            newest_id = max(c.id for c in store.conversations())
            while store.conversation(newest_id).params != params():  # as the headless run does; the
                store.set_params(newest_id, params())  # panel writes its own back once it has drawn them
                time.sleep(0.3)  # its input takes the focus just after it is drawn
            tmux.keys(PROMPT, literal=True)
            settle(pid)  # typed and drawn
            engine = engine_pid(pid)
            began, engine_began = process_cpu_s(pid), process_cpu_s(engine) if engine else 0.0
            tmux.keys("Enter")
            tmux.wait(answered, "the answer")
            cpu = process_cpu_s(pid) - began
            engine = engine or engine_pid(pid)  # the first answer starts the engine
            engine_cpu = process_cpu_s(engine) - engine_began if engine else 0.0
            newest = max(c.id for c in store.conversations())
            measured.add(newest)
            settle(pid)  # the finished answer drawn before anything else runs
            return store.messages(newest)[-1].metrics, cpu, engine_cpu

        for _ in range(WARMUPS + 1):  # the first loads the engine (and warms it up); not measured
            one_answer()
        for i in range(pairs):
            if i % 2:
                answer = bare.run(NEW_TOKENS)
            metrics, cpu, engine_cpu = one_answer()
            if not i % 2:
                answer = bare.run(NEW_TOKENS)
            results["ui_cpu"].append(cpu)
            record(results, metrics, engine_cpu, answer)
    finally:
        if store is not None:
            store.close()
        tmux.run("kill-server")
    return results


def main() -> int:
    from gaudi_tui.core.chat.client import EngineClient
    from gaudi_tui.core.chat.options import LoadOptions

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["all", "path", "screen", "tmux"], default="all")
    parser.add_argument("--pairs", type=int, default=PAIRS, help="pairs of measured/bare answers per part")
    parser.add_argument("--threads", type=int, default=default_threads(), help="torch threads on both sides")
    args = parser.parse_args()
    own_home()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # the engines (and the panel's) inherit it
    parts = {"path", "screen", "tmux"} if args.part == "all" else {args.part}
    began, load_before = time.monotonic(), os.getloadavg()
    client = EngineClient()
    client.start()
    try:
        loaded = client.load(LoadOptions())
        bare = Bare(loaded.device, loaded.dtype, args.threads, PROMPT, ROOT)  # the engine's device, dtype
        for _ in range(WARMUPS + 1):  # as the engine warms up at its load, then its untimed answers
            bare.run(NEW_TOKENS)
        path = worker_path(client, bare, args.pairs) if "path" in parts else None
    finally:
        client.shutdown()
    try:
        if "screen" in parts:
            WINDOW.install()
            DRAWN.install()
        screen = asyncio.run(pane(bare, args.pairs)) if "screen" in parts else None
        tmux = in_tmux(bare, args.pairs) if "tmux" in parts and shutil.which("tmux") else None
    finally:
        bare.close()
    print(
        f"demo model on {bare.device} ({bare.dtype}), greedy, {NEW_TOKENS} new tokens, {args.threads} torch "
        f"threads both sides; {args.pairs} pairs (measured then bare, bare then measured, alternated), "
        f"{WARMUPS} untimed answers each side first; medians (min–max)"
    )
    load = lambda values: " ".join(f"{x:.2f}" for x in values)  # noqa: E731
    print(
        f"load average {load(load_before)} at the start, {load(os.getloadavg())} at the end; {time.monotonic() - began:.0f} s"
    )
    if path is not None:
        report("engine + pipe + worker (the pane's path)", path, "stop request to stopped answer", 0.98)
    if screen is not None:
        headless, main_cpu = (
            "whole Chat screen, headless (rendering included)",
            "its main thread's CPU while it decoded:",
        )
        report(headless, screen, "Esc to stopped answer", 0.97, main_cpu)
    if "tmux" in parts and tmux is None:
        print("whole Chat screen in tmux: skipped (tmux is not installed)")
    elif tmux is not None:
        report(
            "whole Chat screen in tmux 100x30 (`python -m gaudi_tui`, a real terminal)",
            tmux,
            None,
            0.97,
            "the UI process's CPU (all threads, Enter to the stored answer):",
        )
    if (path is not None and not path["stop"]) or (screen is not None and not screen["stop"]):
        print("could not measure a stop: every answer finished before its stop arrived", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
