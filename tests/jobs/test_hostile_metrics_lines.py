"""H8 (issue 38): one line no reader can hold in ANY run's metrics.jsonl (a NaN or string step, a
string time, a 400-digit figure) is skipped, and every reader of the file goes on with the lines
around it: the Training list (`Monitor.poll`), the list row's summary, the detail's points and
charts, the insight's points. On 73fabd2 each of these raised (ValueError, OverflowError)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from gaudi_tui.core.jobs.monitor import Monitor
from gaudi_tui.core.jobs.series import ChartSeries
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.summary import SummaryReader
from gaudi_tui.core.jobs.tailing import MetricsReader

BAD_LINES = {
    "nan_step": b'{"event":"log","step":NaN,"time":3.0,"loss":1.0}',
    "string_step": b'{"event":"log","step":"3","time":3.0,"loss":1.0}',
    "string_time": b'{"event":"log","step":3,"time":"noon","loss":1.0}',
    "digits_400": b'{"event":"log","step":3,"time":3.0,"loss":' + b"9" * 400 + b"}",
    "digits_400_step": b'{"event":"log","step":' + b"9" * 400 + b',"time":3.0,"loss":1.0}',
    "float_time_huge": b'{"event":"log","step":3,"time":1e400,"loss":1.0}',
}


def _log(step: int, loss: float) -> bytes:
    return json.dumps(
        {"event": "log", "step": step, "time": float(step), "loss": loss, "max_steps": 9}
    ).encode()


def _metrics(bad: bytes) -> bytes:
    return b"\n".join([_log(1, 4.0), _log(2, 3.0), bad, _log(4, 1.0)]) + b"\n"


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_every_metrics_reader_skips_the_line_and_reads_the_rest(name: str, tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(_metrics(BAD_LINES[name]))
    reader = MetricsReader(path)
    assert reader.poll()
    assert [(p.step, p.loss) for p in reader.points] == [(1, 4.0), (2, 3.0), (4, 1.0)]
    assert reader.skipped == 1 and reader.seconds_per_step() == 1.0
    summary = SummaryReader(path)
    assert summary.poll() and summary.summary.step == 4 and summary.summary.loss == 1.0
    assert summary.summary.seconds_per_step() == 1.0
    charts = ChartSeries(path, cache=False)
    charts.poll()
    assert charts.data().lines["loss"] == ((1.0, 2.0, 4.0), (4.0, 3.0, 1.0)) and charts.skipped == 1


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_forward_reads_skip_the_line_too(name: str, tmp_path: Path) -> None:
    """A line appended after the first read goes through each reader's forward path."""
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(_log(1, 4.0) + b"\n")
    summary = SummaryReader(path)
    summary.poll()
    with path.open("ab") as fh:
        fh.write(BAD_LINES[name] + b"\n" + _log(4, 1.0) + b"\n")
    assert summary.poll() and summary.summary.step == 4
    assert summary.summary.seconds_per_step() == 1.0


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_the_training_list_and_the_insight_go_on(name: str) -> None:
    hurt = runfolder.create(JobSpec(name="hurt"), accelerator="cpu")
    well = runfolder.create(JobSpec(name="well"), accelerator="cpu")
    hurt.metrics_path.write_bytes(_metrics(BAD_LINES[name]))
    well.metrics_path.write_bytes(_log(1, 2.0) + b"\n" + _log(2, 1.5) + b"\n")
    views = {v.name: v for v in Monitor().poll()}
    assert (views["hurt"].step, views["hurt"].loss) == (4, 1.0)
    assert (views["well"].step, views["well"].loss) == (2, 1.5)
    insight = InsightWatcher(hurt)
    insight.poll(catch_up=True)
    assert [p.step for p in insight.history.points] == [1, 2, 4]
