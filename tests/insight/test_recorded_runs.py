"""The two recorded fake-runtime runs (tests/insight/data/README.md): variable lengths are still
compiling after warm-up, padded ones settle (and name their fallback op)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from gaudi_tui.core.jobs.runfolder import RunFolder

RUNS = Path(__file__).parent / "data" / "runs"


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")  # generated_on is the recording host's local time
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def replay(label: str) -> RunFolder:
    (source,) = [p for p in RUNS.iterdir() if f"-lengths-{label}-" in p.name]
    target = runfolder.runs_dir() / source.name
    target.mkdir(mode=0o700)
    for item in source.iterdir():
        (target / item.name).write_bytes(item.read_bytes().replace(b"{RUN}", str(target).encode()))
    return RunFolder(target)


def test_the_recorded_variable_length_run_is_still_compiling() -> None:
    watcher = InsightWatcher(replay("variable"))
    watcher.poll()
    insight = watcher.insight()
    assert insight.graphs_by_rank[0] == list(range(1, 21))
    assert [f.text for f in insight.findings] == [
        "still compiling after warm-up: 10 graphs in the last 10 steps"
    ]


def test_the_recorded_padded_run_settles_and_names_its_fallback() -> None:
    watcher = InsightWatcher(replay("padded"))
    watcher.poll()
    insight = watcher.insight()
    assert insight.graphs_by_rank[0] == [1] * 20 and insight.ranks[0].after_warmup_graphs == 0
    assert [f.id for f in insight.findings] == ["cpu-fallback"]
