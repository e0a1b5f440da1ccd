"""A file that vanishes while a reader catches up leaves nothing behind (issue 38, M8): `behind` once
stayed set, so the insight's catch-up loop and the Training poll's history read spun at 100 % CPU."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from gaudi_tui.core.jobs.series import ChartSeries
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.untrusted.files import AppendReader


def log_lines(count: int) -> str:
    return "".join(
        json.dumps({"event": "log", "step": s, "time": 1000.0 + s, "loss": 1.0, "pad": "x" * 200}) + "\n"
        for s in range(1, count + 1)
    )


def test_the_append_reader_is_not_behind_a_file_that_vanished(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(log_lines(20))
    reader = AppendReader(path)
    reader.read_lines(at_most=1000)
    assert reader.behind > 0
    path.unlink()
    assert reader.read_lines(at_most=1000) == ([], 0)
    assert reader.behind == 0


def test_the_chart_series_is_not_behind_a_file_that_vanished(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(log_lines(20))
    series = ChartSeries(path)
    series.poll(max_bytes=1000)
    assert series.behind > 0
    path.unlink()
    assert not series.poll(max_bytes=1000)
    assert series.behind == 0  # the Training poll shows the history as loaded, and stops reading


def test_the_insight_catch_up_ends_when_metrics_vanish_mid_way() -> None:
    run = runfolder.create(JobSpec(name="vanish"), accelerator="cpu")
    run.metrics_path.write_text(log_lines(1))
    watcher = InsightWatcher(run)
    watcher.poll()
    with run.metrics_path.open("a") as fh:
        fh.write(log_lines(12_000))  # about 3 MiB: three slices of the catch-up
    reader = watcher._log
    read = reader.read_lines

    def then_vanish(max_bytes: int | None = None, at_most: int | None = None) -> tuple[list[str], int]:
        got = read(max_bytes, at_most)
        run.metrics_path.unlink(missing_ok=True)  # the run folder deleted after the first slice
        return got

    reader.read_lines = then_vanish  # type: ignore[method-assign]
    polling = threading.Thread(target=watcher.poll, daemon=True)
    polling.start()
    polling.join(timeout=20)
    assert not polling.is_alive(), "the catch-up kept looping over a file that is gone"
