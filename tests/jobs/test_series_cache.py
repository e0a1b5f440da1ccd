"""The chart series kept between panel starts (core/jobs/series_cache.py): a second reader of the same
metrics.jsonl starts from the first one's lines, extends them from the saved offset when the file
grew, and reads afresh when the cache is stale or malformed; the points always those of a full read."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import series, series_cache
from gaudi_tui.core.jobs.series import ChartSeries


def cache_path(metrics: Path) -> Path:
    """The Training charts' saved series of `metrics`."""
    return series_cache.cache_path(metrics, series.METRICS)


def log_lines(first: int, last: int) -> str:
    return "".join(
        json.dumps(
            {"event": "log", "step": s, "loss": 3.0 / s + (2.0 if s % 97 == 0 else 0.0), "grad_norm": s % 7}
        )
        + "\n"
        for s in range(first, last + 1)
    )


def read_all(path: Path, cache: bool = True, max_bytes: int = series.SLICE_BYTES) -> ChartSeries:
    reader = ChartSeries(path, cache=cache)
    reader.poll(max_bytes)
    while reader.behind:
        reader.poll(max_bytes)
    return reader


@pytest.fixture
def metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(series, "SAVE_BYTES", 1)  # every file is long enough to save
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps({"event": "begin", "step": 0}) + "\n" + log_lines(1, 3000))
    return path


def test_a_second_reader_starts_from_the_saved_series(metrics: Path) -> None:
    fresh = read_all(metrics, cache=False).data()
    read_all(metrics)
    assert cache_path(metrics).exists()
    again = ChartSeries(metrics)
    assert again.poll(max_bytes=64)  # one tiny slice: the saved lines, not the file's first line
    assert again.behind == 0 and again.offset == metrics.stat().st_size
    assert again.data() == fresh


def test_the_cache_is_private(metrics: Path) -> None:
    read_all(metrics)
    assert stat.S_IMODE(cache_path(metrics).stat().st_mode) == 0o600
    assert stat.S_IMODE(cache_path(metrics).parent.stat().st_mode) == 0o700


def test_a_grown_file_extends_from_the_saved_offset(metrics: Path) -> None:
    read_all(metrics)
    saved = metrics.stat().st_size
    with metrics.open("a") as fh:
        fh.write(log_lines(3001, 3500))
    again = ChartSeries(metrics)
    again.poll(max_bytes=metrics.stat().st_size - saved)  # exactly what was appended
    assert again.behind == 0
    assert again.data() == read_all(metrics, cache=False).data()


def test_a_rewritten_file_reads_afresh(metrics: Path) -> None:
    read_all(metrics)
    text = metrics.read_text()
    metrics.write_text(text.replace('"loss": 3.0,', '"loss": 9.0,', 1))  # same length, other bytes
    assert len(metrics.read_text()) == len(text) and metrics.read_text() != text
    again = read_all(metrics)
    assert again.data() == read_all(metrics, cache=False).data()
    assert again.data().lines["loss"][1][0] == 9.0


@pytest.mark.parametrize("where", ["head", "tail"])
def test_a_rewrite_of_the_same_size_and_time_reads_afresh(metrics: Path, where: str) -> None:
    """A rewrite that keeps both the size and the modification time (a copy with `cp -p`, a restore)
    is told by the bytes: the first, or the last before the offset."""
    read_all(metrics)
    before, text = metrics.stat(), metrics.read_text()
    changed = (
        text.replace('"loss": 3.0,', '"loss": 9.0,', 1)
        if where == "head"
        else text[: text.rindex('"loss": 0.')] + '"loss": 8.' + text[text.rindex('"loss": 0.') + 10 :]
    )
    assert len(changed) == len(text) and changed != text
    metrics.write_text(changed)
    os.utime(metrics, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert metrics.stat().st_size == before.st_size and metrics.stat().st_mtime_ns == before.st_mtime_ns
    again = read_all(metrics)
    assert again.data() == read_all(metrics, cache=False).data()
    assert (
        (again.data().lines["loss"][1][0] == 9.0) if where == "head" else again.data().latest["loss"] == 8.001
    )


def test_a_file_cut_back_reads_afresh(metrics: Path) -> None:
    read_all(metrics)
    metrics.write_text(json.dumps({"event": "begin", "step": 0}) + "\n" + log_lines(1, 10))
    assert read_all(metrics).data() == read_all(metrics, cache=False).data()


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: "not json",
        lambda d: json.dumps([d]),
        lambda d: json.dumps({**d, "format": "charts-0"}),
        lambda d: json.dumps({**d, "metrics": ["loss"]}),
        lambda d: json.dumps({**d, "offset": "12"}),
        lambda d: json.dumps({**d, "ema": [1.0]}),
        lambda d: json.dumps(
            {**d, "lines": {**d["lines"], "loss": {"width": 1, "buckets": [[1, 2]], "last": None}}}
        ),
        lambda d: json.dumps(
            {**d, "lines": {**d["lines"], "loss": {"width": 0, "buckets": [], "last": None}}}
        ),
    ],
)
def test_a_malformed_cache_is_ignored(metrics: Path, damage) -> None:
    read_all(metrics)
    cached = cache_path(metrics)
    cached.write_text(damage(json.loads(cached.read_text())))
    again = ChartSeries(metrics)
    again.poll(max_bytes=64)
    assert again.offset < 64  # read from the start
    assert read_all(metrics).data() == read_all(metrics, cache=False).data()


def test_a_small_read_does_not_save(metrics: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(series, "SAVE_BYTES", 1 << 30)
    read_all(metrics)
    assert not cache_path(metrics).exists()


def test_a_save_removes_the_series_of_deleted_runs(metrics: Path) -> None:
    other = metrics.parent.parent / "deleted-run" / "metrics.jsonl"
    other.parent.mkdir()
    other.write_text(log_lines(1, 500))
    read_all(other)
    stranger = cache_path(metrics).parent / "notes.txt"  # not a saved series: left alone
    stranger.write_text("mine")
    broken = cache_path(metrics).parent / f"{'0' * 20}.json"
    broken.write_text("{not json")
    for gone in other.parent.iterdir():
        gone.unlink()
    other.parent.rmdir()  # the user deletes that run's folder
    read_all(metrics)
    assert cache_path(metrics).exists()
    assert not cache_path(other).exists() and not broken.exists()
    assert stranger.read_text() == "mine"
