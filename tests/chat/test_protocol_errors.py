"""The wire format and the messages failures turn into."""

from __future__ import annotations

import signal

import pytest

from gaudi_tui.core.chat.errors import ChatError, death_message, explain
from gaudi_tui.core.chat.metrics import AnswerMetrics, MemoryReport, decode_rate
from gaudi_tui.core.chat.protocol import ProtocolError, decode, encode


def test_round_trip_keeps_unicode_on_one_line() -> None:
    line = encode({"ev": "token", "text": "é\n✓", "n": 3})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode(line, "ev") == {"ev": "token", "text": "é\n✓", "n": 3}


@pytest.mark.parametrize(
    ("line", "key", "match"),
    [
        (b"hello\n", "op", "not JSON"),
        (b"[1]\n", "op", "not a JSON object"),
        (b'{"op": "fly"}\n', "op", "unknown op"),
    ],
)
def test_bad_lines_are_refused(line: bytes, key: str, match: str) -> None:
    with pytest.raises(ProtocolError, match=match):
        decode(line, key)


# The message Gaudi's PyTorch bridge raises when HBM runs out (habana_frameworks, graph launch).
GAUDI_OOM = (
    "[Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::1073741824 (1024)MB\n"
    "PT_DEVMEM Allocation failed"
)


def test_out_of_memory_on_each_accelerator_is_recognised() -> None:
    import torch

    gaudi = explain(RuntimeError(GAUDI_OOM), "generate")
    assert gaudi.kind == "oom" and gaudi.message.startswith("Out of Gaudi device memory while generating")
    assert "stays loaded" in gaudi.message
    cuda = explain(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), "load")
    assert cuda.kind == "oom" and cuda.message.startswith("Out of CUDA memory while loading the model")
    assert "4-bit NF4" in cuda.message
    host = explain(
        RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 bytes"), "load"
    )
    assert host.kind == "oom" and host.message.startswith("Out of host memory")


def test_known_and_unknown_failures() -> None:
    assert explain(ChatError("tokenizer", "broken"), "load").kind == "tokenizer"
    other = explain(ValueError("bad shape"), "generate")
    assert (other.kind, other.message) == ("failed", "ValueError: bad shape while generating.")


def test_death_message_names_the_signal_and_the_last_log_line() -> None:
    text = death_message(-signal.SIGKILL, "Killed")
    assert "killed by SIGKILL" in text and "out-of-memory killer" in text and "Last log line: Killed" in text
    assert "reload" in text
    assert "exited with code 1" in death_message(1, "")


def test_metrics_summary_and_json() -> None:
    memory = MemoryReport("hpu", in_use=2 << 30, peak=3 << 30, limit=96 << 30)
    metrics = AnswerMetrics(0.0123, 210.04, 25, 64, 0.4, stopped=True, memory=memory)
    assert (
        metrics.summary()
        == "TTFT 12 ms · 210.0 tok/s · 25 in / 64 out · HPU 2.00 GiB (peak 3.00 GiB of 96.00 GiB) · stopped"
    )
    assert AnswerMetrics.from_dict(metrics.to_dict()) == metrics
    assert MemoryReport("cpu", 300 << 20, 400 << 20).summary() == "RSS 300 MiB (peak 400 MiB)"
    assert decode_rate(11, 1.0, 1.5) == 20.0
    assert decode_rate(1, 1.0, 1.5) is None
