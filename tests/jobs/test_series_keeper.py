"""The supervisor keeps the Training charts' series in the run folder as the job writes metrics.jsonl
(core/jobs/series_keeper.py, issue 41 item 2): a panel's first open of a long run reads the kept
series and only the lines after it, and draws what a read of every line draws; a kept file that is
not of these bytes, or not a series at all (another user's file on a shared host), is ignored."""

from __future__ import annotations

import json
from pathlib import Path

from gaudi_tui.core.jobs import series_cache
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.series import METRICS, ChartSeries
from gaudi_tui.core.jobs.series_keeper import SeriesKeeper, catch_up
from tests.jobs.conftest import wait_for

SMALL = 64 * 1024
"""One panel poll's slice in these tests: far less than the history."""


def write_lines(path: Path, first: int, count: int) -> None:
    with path.open("a") as fh:
        for step in range(first, first + count):
            loss = 5.0 / (1 + step / 500) + (step * 7919 % 101) / 1000
            fh.write(json.dumps({"event": "log", "time": 1.0e9 + step, "step": step, "loss": loss,
                                 "learning_rate": 1e-4, "grad_norm": 1.0 + step % 13}) + "\n")  # fmt: skip


def full_read(path: Path) -> ChartSeries:
    series = ChartSeries(path, cache=False)
    catch_up(series)
    return series


def kept_offset(run: RunFolder) -> int | None:
    kept = series_cache.load(run.metrics_path, METRICS, kept=True)
    return None if kept is None else kept["offset"]


def test_a_panels_first_open_reads_the_kept_series_and_only_the_lines_after_it(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    write_lines(run.metrics_path, 1, 30_000)  # about 3.5 MB
    keeper = SeriesKeeper(run, every_s=0.05).start()
    size = run.metrics_path.stat().st_size
    wait_for(lambda: kept_offset(run) == size, 30, "the series kept to the file's end")
    write_lines(run.metrics_path, 30_001, 200)  # appended after the save: under SAVE_BYTES, not kept yet
    wait_for(lambda: keeper.series.offset == run.metrics_path.stat().st_size, 30, "the keeper to read them")
    assert kept_offset(run) == size

    panel = ChartSeries(run.metrics_path)
    assert panel.poll(max_bytes=SMALL)
    assert panel.behind == 0  # one small slice: the kept series, then the 200 lines after it
    assert panel.data() == full_read(run.metrics_path).data()

    keeper.finish()  # the attempt ended: the last save, however little was read since
    assert not keeper.thread.is_alive()
    assert kept_offset(run) == run.metrics_path.stat().st_size


def test_a_kept_series_of_other_bytes_or_not_a_series_is_ignored(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    write_lines(run.metrics_path, 1, 20_000)
    keeper = SeriesKeeper(run, every_s=0.05).start()
    keeper.finish()
    kept = series_cache.kept_path(run.metrics_path)
    assert kept_offset(run) == run.metrics_path.stat().st_size

    run.metrics_path.unlink()  # the file rewritten: other losses, the kept series no longer its own
    write_lines(run.metrics_path, 2, 20_000)
    panel = ChartSeries(run.metrics_path)
    panel.poll(max_bytes=SMALL)
    assert panel.behind > 0  # read afresh
    catch_up(panel)
    assert panel.data() == full_read(run.metrics_path).data()

    own = series_cache.cache_path(run.metrics_path, METRICS)
    for hostile in (
        b"[" * 100_000,
        b'{"format": "charts-1", "offset": 1e999}',
        b"\xff\xfe",
        b"x" * (9 << 20),
    ):
        own.unlink(missing_ok=True)  # the panel's own saved series (the read above saved one)
        kept.write_bytes(hostile)
        panel = ChartSeries(run.metrics_path)
        panel.poll(max_bytes=SMALL)
        assert panel.behind > 0, hostile[:20]
