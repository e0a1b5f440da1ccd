"""GaudiTrainer's memory figures, read by the output readers every command job uses, from the
real published lines (tests/insight/data/README.md gives each line's source)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaudi_tui.core.jobs.readers import OutputMetrics

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("source", ["auto", "trainer"])
@pytest.mark.parametrize("chunk", [0, 5])
def test_gaudi_trainer_memory_keys_and_the_end_summary_are_read(source: str, chunk: int) -> None:
    text = (DATA / "gaudi-trainer-memory.log").read_text()
    out = OutputMetrics(source, clock=lambda: 1.0)  # type: ignore[arg-type]
    events = []
    for i in range(0, len(text), chunk or len(text)):
        events += out.feed(text[i : i + (chunk or len(text))])
    events += out.flush()
    logs = [e for e in events if e["event"] == "log"]
    assert [round(e["max_memory_mib"] / 1024, 2) for e in logs] == [6.32, 78.71]
    assert [round(e["total_memory_mib"] / 1024, 2) for e in logs] == [29.85, 94.62]
    assert round(logs[1]["memory_mib"] / 1024, 2) == 34.51
    (summary,) = [e for e in events if e["event"] == "summary"]
    assert round(summary["max_memory_mib"] / 1024, 2) == 94.41
    assert summary["train_samples_per_second"] == 7.392


def test_a_log_metrics_block_with_its_runtime_is_one_summary() -> None:
    block = (
        "***** train metrics *****\n  epoch                     =        3.0\n"
        "  max_memory_allocated (GB) =      94.41\n  train_runtime             = 0:01:02.50\n"
        "  train_loss                =     1.2345\nsaving model\n"
    )
    out = OutputMetrics("auto", clock=lambda: 1.0)
    (summary,) = [e for e in out.feed(block) if e["event"] == "summary"]
    assert summary["train_runtime"] == 62.5 and summary["train_loss"] == 1.2345


def test_other_key_value_lines_are_not_a_summary() -> None:
    out = OutputMetrics("auto", clock=lambda: 1.0)
    assert out.feed("  batch_size = 8\n  model = gpt2\nlr = 0.1\n") + out.flush() == []
