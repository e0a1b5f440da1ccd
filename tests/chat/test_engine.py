"""The engine child with the demo model: load, stream, stop, continue, stats, and bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import psutil
import pytest

from gaudi_tui.core.chat.client import EngineClient
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.options import GAUDI_BNB_REASON, GenerationParams, LoadOptions
from tests.chat.conftest import start_engine
from tests.conftest import FAKES, PYTHON, ROOT, child_env, host_accelerator

QUESTION = [{"role": "user", "content": "What is hl-smi?"}]
LONG = GenerationParams(max_new_tokens=200, min_new_tokens=200)


def test_load_report(engine: EngineClient) -> None:
    report = engine.report
    assert report is not None
    host = host_accelerator()  # cpu here; cuda or hpu where the probe finds one
    assert (report.label, report.model_type, report.device.split(":")[0], report.dtype) == (
        "demo model",
        "qwen3",
        host.kind,
        host.dtype,
    )
    assert (
        report.accelerator == host.kind and report.quantization == "none" and report.compile_backend is None
    )
    assert report.chat_template is True and report.context_length == 256
    assert report.parameters > 100_000
    assert report.load_s > 0 and report.warmup_s > 0
    assert report.memory is not None and report.memory.kind == host.kind and report.memory.rss > 50 << 20


def test_the_module_engine_has_a_private_home(
    engine: EngineClient, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The module's engine started before this test's home was set: it has one of its own, under
    this session's temporary folder, never the user's state folder or runs folder."""
    env = psutil.Process(engine.pid).environ()
    home = Path(env["GAUDI_TUI_HOME"])
    assert home.parent.parent == tmp_path_factory.getbasetemp() and home.name == "gaudi-home"
    assert home != Path(os.environ["GAUDI_TUI_HOME"])  # not this test's either: the engine outlives it
    assert "GAUDI_TUI_RUNS_DIR" not in env


def test_answer_streams_in_pieces(engine: EngineClient) -> None:
    chunks: list[str] = []
    answer = engine.generate(QUESTION, GenerationParams(), on_text=chunks.append)
    # the first token goes out alone (time to first token); later ones are batched per TOKEN_BATCH_S
    assert len(chunks) >= 2
    assert len(chunks[0]) < len(answer.text)
    assert "".join(chunks) == answer.text
    assert "hl-smi" in answer.text  # the demo model was trained on this question
    assert not answer.stopped
    metrics = answer.metrics
    assert metrics.tokens_in > 5 and metrics.tokens_out >= len(chunks)
    assert metrics.ttft_s is not None and 0 < metrics.ttft_s < metrics.total_s
    assert metrics.decode_tps is not None and metrics.decode_tps > 0
    assert metrics.memory is not None and metrics.memory.kind == host_accelerator().kind


def test_the_decode_rate_is_the_models_pace_from_the_engines_own_stamps(
    engine: EngineClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each token event says when its newest token came out of the model (on the clock the client
    stamps arrivals with): in order, never after it arrived; the decode rate is taken from them."""
    seen: list[tuple[float, dict]] = []
    real = engine._events.put
    monkeypatch.setattr(engine._events, "put", lambda item, *a, **k: seen.append(item) or real(item, *a, **k))
    answer = engine.generate(QUESTION, LONG)
    tokens = [(arrived, ev) for arrived, ev in seen if ev["ev"] == "token"]
    made = [ev["made_at"] for _, ev in tokens]
    assert len(tokens) >= 2 and made == sorted(made)
    assert all(ev["made_at"] <= arrived for arrived, ev in tokens)
    metrics = answer.metrics
    assert metrics.decode_tps == pytest.approx((metrics.tokens_out - 1) / (made[-1] - made[0]))


def test_a_reader_late_to_the_last_tokens_does_not_slow_the_decode_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The last event reached a reader busy elsewhere 0.5 s after the engine made its token: the
    rate is still 99 tokens in 0.99 s; the time to first token is still the first's arrival."""
    client = EngineClient()
    monkeypatch.setattr(client, "_send", lambda message: None)
    base = time.monotonic() + 5.0  # events stamped ahead of the call, however late it comes
    for arrived, event in (
        (base + 0.2, {"ev": "start", "tokens_in": 7}),
        (base + 0.25, {"ev": "token", "text": "a", "n": 1, "made_at": base + 0.24}),
        (base + 1.73, {"ev": "token", "text": "b", "n": 100, "made_at": base + 1.23}),
        (base + 1.73, {"ev": "done", "stopped": False, "tokens_in": 7, "tokens_out": 100, "rows": []}),
    ):
        client._events.put((arrived, event))
    metrics = client.generate(QUESTION, LONG).metrics
    assert metrics.decode_tps == pytest.approx(99 / 0.99)  # 99 / 1.48 where the tokens arrived
    assert metrics.ttft_s is not None and 4.0 < metrics.ttft_s <= 5.25  # the first's arrival - the send


def test_greedy_answers_repeat_and_seeded_sampling_is_reproducible(engine: EngineClient) -> None:
    assert (
        engine.generate(QUESTION, GenerationParams()).text
        == engine.generate(QUESTION, GenerationParams()).text
    )
    sampled = GenerationParams(do_sample=True, temperature=1.5, seed=123, max_new_tokens=40)
    assert engine.generate(QUESTION, sampled).text == engine.generate(QUESTION, sampled).text


def test_stop_keeps_the_partial_answer_and_the_model(engine: EngineClient) -> None:
    cancel = threading.Event()
    chunks: list[str] = []

    def on_text(text: str) -> None:
        chunks.append(text)
        cancel.set()  # stop as soon as the first text arrives

    answer = engine.generate(QUESTION, LONG, on_text=on_text, cancel=cancel)
    assert answer.stopped and answer.metrics.stopped
    assert 0 < answer.metrics.tokens_out < 200
    assert answer.text == "".join(chunks)
    # Continue the same conversation, partial answer included: the engine is still loaded.
    follow_up = [
        *QUESTION,
        {"role": "assistant", "content": answer.text},
        {"role": "user", "content": "What is HL-225?"},
    ]
    again = engine.generate(follow_up, GenerationParams(max_new_tokens=20))
    assert not again.stopped and again.metrics.tokens_out > 0
    assert again.metrics.tokens_in > answer.metrics.tokens_in


def test_stop_from_another_thread(engine: EngineClient) -> None:
    started = threading.Event()
    timer = threading.Thread(target=lambda: started.wait(30) and engine.stop())
    timer.start()
    answer = engine.generate(QUESTION, LONG, on_text=lambda _: started.set())
    timer.join()
    assert answer.stopped and answer.metrics.tokens_out < 200


def test_stats_report_memory(engine: EngineClient) -> None:
    memory = engine.stats()
    assert memory is not None and memory.kind == host_accelerator().kind and memory.in_use and memory.limit


def _broken_copies(demo_path: Path, tmp_path: Path) -> dict[str, Path]:
    not_causal = tmp_path / "bert"
    not_causal.mkdir()
    (not_causal / "config.json").write_text(
        json.dumps({"model_type": "bert", "architectures": ["BertForMaskedLM"]})
    )
    broken_tokenizer = tmp_path / "broken-tokenizer"
    shutil.copytree(demo_path, broken_tokenizer)
    (broken_tokenizer / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "BPE", "vocab": ')
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "config.json").write_text(
        json.dumps(
            {"model_type": "mystery", "auto_map": {"AutoConfig": "configuration_mystery.MysteryConfig"}}
        )
    )
    no_config = tmp_path / "empty"
    no_config.mkdir()
    return {
        "not_causal": not_causal,
        "broken_tokenizer": broken_tokenizer,
        "remote": remote,
        "empty": no_config,
    }


def test_bad_models_get_clear_errors_and_the_engine_lives_on(demo_path: Path, tmp_path: Path) -> None:
    folders = _broken_copies(demo_path, tmp_path)
    client = start_engine(tmp_path)
    cases = [
        (str(tmp_path / "missing"), "not_found", "does not exist"),
        (str(folders["empty"]), "not_a_model", "has no config.json"),
        (
            str(folders["not_causal"]),
            "not_causal_lm",
            "is a bert model (BertForMaskedLM), not a causal language model",
        ),
        (str(folders["broken_tokenizer"]), "tokenizer", "cannot be used (JSONDecodeError"),
        (str(folders["remote"]), "remote_code", "turn on 'trust remote code'"),
        (
            "someone/not-cached-model",
            "not_cached",
            "not in the local Hugging Face cache and the Hub is switched off",
        ),
    ]
    try:
        for model, kind, text in cases:
            with pytest.raises(ChatError) as caught:
                client.load(LoadOptions(model=model))
            assert caught.value.kind == kind, caught.value.message
            assert text in caught.value.message
            assert client.alive
        with pytest.raises(ChatError, match="No model is loaded"):
            client.generate(QUESTION, GenerationParams())
        assert client.load(LoadOptions()).label == "demo model"  # same engine, good model now
    finally:
        client.shutdown()


def test_native_output_goes_to_the_log_not_the_protocol(tmp_path: Path) -> None:
    """What the runtime writes to fd 1 or 2 (and Python prints) lands in the log file."""
    code = (
        "import os\n"
        "from gaudi_tui.core.chat.engine.server import protocol_stream\n"
        "out = protocol_stream()\n"
        "os.write(1, b'native fd1 noise\\n')\n"
        "os.write(2, b'native fd2 noise\\n')\n"
        "print('python print noise', flush=True)\n"
        'out.write(b\'{"ev": "bye"}\\n\')\n'
    )
    log = tmp_path / "engine.log"
    with open(log, "wb") as stderr:
        done = subprocess.run(
            [PYTHON, "-c", code], stdout=subprocess.PIPE, stderr=stderr, env=child_env(), check=True
        )
    assert done.stdout == b'{"ev": "bye"}\n'
    assert log.read_text().splitlines() == ["native fd1 noise", "native fd2 noise", "python print noise"]


def test_sigkill_is_reported_and_a_new_engine_reloads(tmp_path: Path) -> None:
    import signal

    exits: list[str] = []
    client = start_engine(tmp_path, LoadOptions())
    client.on_exit = exits.append
    killed = threading.Event()

    def kill_once(_: str) -> None:
        if not killed.is_set():
            killed.set()
            os.kill(client.pid or 0, signal.SIGKILL)

    with pytest.raises(ChatError) as caught:
        client.generate(QUESTION, LONG, on_text=kill_once)
    assert caught.value.kind == "engine_died"
    assert "killed by SIGKILL" in caught.value.message
    assert caught.value.partial  # what streamed before the kill is kept
    assert not client.alive and exits and "SIGKILL" in exits[0]
    with pytest.raises(ChatError, match="SIGKILL"):  # later calls fail at once, they do not hang
        client.generate(QUESTION, GenerationParams())
    reloaded = start_engine(tmp_path, LoadOptions())
    try:
        assert "hl-smi" in reloaded.generate(QUESTION, GenerationParams()).text
    finally:
        reloaded.shutdown()
    assert not reloaded.alive  # unload ends the process, which frees the card


def test_4bit_nf4_load_path(tmp_path: Path) -> None:
    client = start_engine(tmp_path, LoadOptions(quantization="nf4"))
    try:
        assert client.report is not None and client.report.quantization == "nf4"
        answer = client.generate(QUESTION, GenerationParams(max_new_tokens=16))
        assert answer.metrics.tokens_out > 0 and answer.text
    finally:
        client.shutdown()


def test_gaudi_engine_refuses_8bit_and_reads_hpu_memory(tmp_path: Path) -> None:
    """With the (fake) Gaudi plugin the engine picks hpu, refuses bitsandbytes 8-bit, and reads
    memory_stats() (InUse / MaxInUse / Limit) inside itself."""
    client = start_engine(tmp_path, PYTHONPATH=os.pathsep.join((str(FAKES), str(ROOT))))
    try:
        with pytest.raises(ChatError) as caught:
            client.load(LoadOptions(quantization="int8"))
        assert caught.value.kind == "unavailable"
        assert (
            caught.value.message
            == f"8-bit LLM.int8 (bitsandbytes) is not available on Gaudi: {GAUDI_BNB_REASON}"
        )
        memory = client.stats()
        assert memory is not None
        assert (memory.kind, memory.in_use, memory.peak, memory.limit) == ("hpu", 0, 0, 101_468_602_368)
    finally:
        client.shutdown()


def test_engine_exits_when_its_parent_is_killed(tmp_path: Path) -> None:
    """No orphans: if the panel dies (even by SIGKILL) the engine's stdin closes and it exits."""
    import signal
    import time

    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from gaudi_tui.core.chat.client import EngineClient\n"
        f"client = EngineClient(log_path=Path({str(tmp_path / 'engine.log')!r}))\n"
        "client.start()\n"
        "print(client.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([PYTHON, "-c", code], stdout=subprocess.PIPE, text=True, env=child_env())
    assert parent.stdout is not None
    engine_pid = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 20
    while Path(f"/proc/{engine_pid}").exists() and "Z" not in _state(engine_pid):
        assert time.monotonic() < deadline, "the engine outlived its parent"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return "gone"
