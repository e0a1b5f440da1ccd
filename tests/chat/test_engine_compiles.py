"""The chat engine counts the graphs the Gaudi runtime compiles: in its warm-up and during each
answer. On CPU under the fake runtime (tests/fakes/hpu_runtime: one graph per new input shape,
written as Intel's saver writes it); a new prompt length compiles, the same prompt again does not."""

from __future__ import annotations

import os
from pathlib import Path

from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from tests.chat.conftest import start_engine
from tests.conftest import ROOT

FAKE_RUNTIME = Path(__file__).resolve().parents[1] / "fakes" / "hpu_runtime"
SHORT = GenerationParams(max_new_tokens=4)


def test_warm_up_and_answers_report_their_compiles(tmp_path: Path) -> None:
    engine = start_engine(
        tmp_path,
        LoadOptions(),
        PYTHONPATH=os.pathsep.join((str(FAKE_RUNTIME), str(ROOT))),
        FAKE_HPU_RUNTIME="1",
        PT_HPU_METRICS_FILE=str(tmp_path / "hpu_metrics.json"),
        PT_HPU_METRICS_DUMP_TRIGGERS="process_exit,metric_change",
    )
    try:
        report = engine.report
        assert report is not None and report.warmup_graphs is not None and report.warmup_graphs >= 1
        assert f"({report.warmup_graphs} graphs)" in report.summary()
        question = [{"role": "user", "content": "What does hl-smi show about the cards on this host?"}]
        first = engine.generate(question, SHORT).metrics
        assert first is not None and first.new_graphs is not None and first.new_graphs >= 1
        assert f"{first.new_graphs} graphs compiled" in first.summary()
        again = engine.generate(question, SHORT).metrics
        assert again is not None and again.new_graphs == 0  # the same shapes: nothing new to compile
    finally:
        engine.shutdown()
