"""A year of runs: the job list's row from the end of metrics.jsonl, the index of settled rows, the
runs re-read only when they change, and the charts' bounded series (issue 28, item 1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import index, monitor, runfolder, series, summary
from gaudi_tui.core.jobs.monitor import Monitor
from gaudi_tui.core.jobs.series import ChartSeries, Downsampled
from gaudi_tui.core.jobs.summary import SummaryReader
from gaudi_tui.core.jobs.tailing import MetricsReader
from tests.jobs.conftest import DATA, replay


def event(kind: str, step: int, **fields: object) -> str:
    return json.dumps({"event": kind, "step": step, "time": 100.0 + step, **fields}) + "\n"


def log(step: int, loss: float | None = None) -> str:
    return event("log", step, max_steps=50, **({} if loss is None else {"loss": loss}))


HISTORY = (
    event("begin", 0, max_steps=50)
    + "".join(log(s, 10.0 - s / 10) for s in range(1, 31))
    + event("save", 20, checkpoint="checkpoint-20")
    + event("end", 30, stopped=True)
    + event("begin", 20, max_steps=50)  # resumed from checkpoint-20: steps 21..30 are dropped
    + "".join(log(s) for s in range(21, 26))  # no loss logged after the resume
    + "not json at all\n"
    + event("eval", 25, eval_loss=1.5)
)


def row_of(reader: SummaryReader) -> tuple[object, ...]:
    s = reader.summary
    return (s.step, s.max_steps, s.loss, s.checkpoint, s.seconds_per_step(), s.found)


def full_read(path: Path) -> tuple[object, ...]:
    """The same row from every point, as MetricsReader (which parses each line) holds them."""
    reader = MetricsReader(path)
    reader.poll()
    losses = [p.loss for p in reader.points if p.loss is not None]
    last = losses[-1] if losses else None
    return (reader.step, reader.max_steps, last, reader.last_checkpoint, reader.seconds_per_step(), True)


def test_the_row_read_from_the_end_is_the_row_of_a_full_read(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(HISTORY)
    reader = SummaryReader(path)
    assert reader.poll()
    assert row_of(reader) == full_read(path) == (25, 50, 8.0, "checkpoint-20", 1.0, True)


def test_a_long_history_is_not_parsed_for_its_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "metrics.jsonl"
    lines = [event("begin", 0, max_steps=20_000), *(log(s, 1.0) for s in range(1, 20_001))]
    path.write_text("".join(lines) + event("save", 20_000, checkpoint="c") + event("end", 20_000))
    parsed: list[bytes] = []
    real = summary.event_of  # counting the lines it parses
    monkeypatch.setattr(summary, "event_of", lambda line: parsed.append(line) or real(line))
    reader = SummaryReader(path)
    reader.poll()
    assert row_of(reader) == (20_000, 50, 1.0, "c", 1.0, True)
    assert len(parsed) < 20


def test_a_finished_runs_row_parses_no_line_of_its_eta_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list of a thousand finished runs never asks for a rate: the ETA window's log lines are
    kept unparsed until one is asked for, and then give the rate a full read gives."""
    path = tmp_path / "metrics.jsonl"
    lines = [event("begin", 0, max_steps=40), *(log(s, 5.0 - s / 10) for s in range(1, 41))]
    path.write_text("".join(lines) + event("save", 40, checkpoint="c") + event("end", 40))
    parsed: list[bytes] = []
    real = summary.event_of
    monkeypatch.setattr(summary, "event_of", lambda line: parsed.append(line) or real(line))
    reader = SummaryReader(path)
    reader.poll()
    assert [json.loads(line)["event"] for line in parsed] == ["end", "save", "log"]
    assert row_of(reader) == full_read(path)
    assert len(parsed) == 3 + summary.ETA_WINDOW - 1  # the rate asked for: the window parsed, once
    reader.summary.seconds_per_step()
    assert len(parsed) == 3 + summary.ETA_WINDOW - 1


def test_the_job_list_asks_no_rate_of_a_finished_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its ETA is none: the row of the recorded finished run parses none of the window's lines."""
    replay()
    parsed: list[bytes] = []
    real = summary.event_of
    monkeypatch.setattr(summary, "event_of", lambda line: parsed.append(line) or real(line))
    (view,) = Monitor().poll()
    assert view.state == "succeeded" and view.eta_s is None
    assert len(parsed) < summary.ETA_WINDOW // 2


def test_appended_lines_extend_the_row_and_a_resume_reads_it_afresh(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    first, rest = HISTORY[:2000], HISTORY[2000:]
    path.write_text(first)
    reader = SummaryReader(path)
    reader.poll()
    assert reader.offset == first.rfind("\n") + 1  # the half-written line waits
    with path.open("a") as fh:
        fh.write(rest)
    assert reader.poll()
    assert row_of(reader) == full_read(path)
    assert not reader.poll()  # nothing new: nothing read


def test_an_old_run_folder_shows_as_before(tmp_path: Path) -> None:
    """A run folder of an earlier version (no index, nothing but its own files) lists as it did."""
    run = replay()
    (view,) = Monitor().poll()
    assert (view.id, view.state, view.step, view.max_steps, view.loss) == (
        run.id,
        "succeeded",
        200,
        200,
        pytest.approx(0.1311, abs=1e-4),
    )
    assert view == full_view(run)


def full_view(run: runfolder.RunFolder) -> monitor.JobView:
    watcher = monitor.RunWatcher(run)
    watcher.poll()
    return watcher.view(0.0)


def copies(count: int) -> list[runfolder.RunFolder]:
    source = sorted((DATA / "runs").iterdir())[-1]
    runs = []
    for i in range(count):
        target = runfolder.runs_dir() / f"{source.name[:-4]}{i:04x}"
        shutil.copytree(source, target)
        runs.append(runfolder.RunFolder(target))
    return runs


def test_a_changed_run_is_read_again_and_an_unchanged_one_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    changed, unchanged = copies(2)
    reads: list[str] = []
    real = runfolder.RunFolder.status
    monkeypatch.setattr(runfolder.RunFolder, "status", lambda self: reads.append(self.id) or real(self))
    watching = Monitor()
    assert [v.state for v in watching.poll()] == ["succeeded", "succeeded"]
    assert sorted(reads) == sorted([changed.id, unchanged.id])
    reads.clear()
    for _ in range(monitor.SETTLED_EVERY):
        watching.poll()
    assert reads == []
    status = changed.status()
    assert status is not None
    changed.write_status(status.with_(state="cancelled"))  # as a resume or a stop rewrites it
    reads.clear()
    views = {}
    for _ in range(monitor.SETTLED_EVERY):
        views = {v.id: v for v in watching.poll()}
    assert reads == [changed.id]
    assert views[changed.id].state == "cancelled" and views[unchanged.id].state == "succeeded"


def test_settled_rows_come_from_the_index_until_their_run_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = copies(3)
    first = Monitor().poll()
    assert index.index_path().is_file()

    def unread(self: runfolder.RunFolder) -> object:
        raise AssertionError(f"{self.id}'s spec was read")

    with monkeypatch.context() as patched:
        patched.setattr(runfolder.RunFolder, "spec", unread)
        patched.setattr(runfolder.RunFolder, "row_spec", unread)  # what the list reads of a spec
        assert Monitor().poll() == first
    with runs[1].metrics_path.open("a") as fh:
        fh.write(log(201, 0.05))
    read: list[str] = []
    real = runfolder.RunFolder.row_spec
    monkeypatch.setattr(runfolder.RunFolder, "row_spec", lambda self: read.append(self.id) or real(self))
    again = Monitor().poll()
    assert read == [runs[1].id]
    assert again[1].step == 200 and again[1].loss == pytest.approx(0.05)  # its `end` still says 200
    assert again[0] == first[0] and again[2] == first[2]


def test_an_unreadable_index_is_ignored() -> None:
    copies(2)
    expected = Monitor().poll()
    index.index_path().write_text('{"format": "1:id", "runs": {"x": {"stamp": [1], "view": {"id": 3}}}')
    assert Monitor().poll() == expected
    index.index_path().write_text("{ not json")
    assert Monitor().poll() == expected


def test_the_downsampled_line_is_bounded_and_keeps_its_peaks() -> None:
    line = Downsampled(buckets=50)
    for step in range(1, 100_001):
        value = 100.0 if step == 54_321 else -7.0 if step == 77_777 else 1.0 + (step % 10) / 100
        line.add(float(step), value)
    xs, ys = line.points()
    assert len(xs) <= 4 * 50 + 1
    assert list(xs) == sorted(xs)
    assert (54_321.0, 100.0) in zip(xs, ys, strict=True)
    assert (77_777.0, -7.0) in zip(xs, ys, strict=True)
    assert xs[-1] == 100_000.0 and ys[-1] == pytest.approx(1.0)


def test_an_appended_line_extends_the_series_without_a_reread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(log(s, 5.0) for s in range(1, 1001)))
    charts = ChartSeries(path)
    while charts.poll(max_bytes=16 * 1024) or charts.behind:  # a long history, in slices
        pass
    assert charts.data().lines["loss"][0][-1] == 1000.0
    parsed: list[bytes | str] = []
    real = series.event_of
    monkeypatch.setattr(series, "event_of", lambda line: parsed.append(line) or real(line))
    with path.open("a") as fh:
        fh.write(log(1001, 9.0))
    assert charts.poll()
    assert parsed == [log(1001, 9.0).strip().encode()]
    data = charts.data()
    assert data.lines["loss"][0][-1] == 1001.0 and data.latest["loss"] == 9.0 and data.read == 1.0
    assert not charts.poll()


def test_a_resume_drops_the_series_after_its_step(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(HISTORY)
    charts = ChartSeries(path)
    charts.poll()
    xs, ys = charts.data().lines["loss"]
    assert xs == tuple(float(s) for s in range(1, 21)) and ys[-1] == pytest.approx(8.0)
    assert charts.data().lines["eval"] == ((25.0,), (1.5,))


def test_a_long_history_loads_one_mebibyte_at_a_time(tmp_path: Path) -> None:
    """The charts read a long metrics.jsonl in 1 MiB slices: a poll holds no more (4 MiB slices, in
    the charts and the insight at once, kept the panel near 100 MB with a 1,000,000-line run)."""
    path = tmp_path / "metrics.jsonl"
    path.write_text(event("begin", 0, max_steps=40_000) + "".join(log(s, 1.0) for s in range(1, 40_001)))
    assert path.stat().st_size > 2 << 20
    charts = ChartSeries(path)
    assert charts.poll()
    assert 0 < charts.offset <= 1 << 20 and charts.behind > 0
