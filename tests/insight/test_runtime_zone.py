"""The Gaudi runtime's `generated_on` is the job host's local time without an offset (issue 38, L1):
it is read in the zone the job's `begin` event says (`utc_offset_s`), not in the panel's; a stamp
with an offset is read as it says, and a run from before the field still reads in the reader's zone."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any, cast

import pytest

from gaudi_tui.core.insight.runtime import timestamp
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from gaudi_tui.core.jobs.insight.zone import job_zone
from gaudi_tui.core.jobs.spec import JobSpec

TOKYO = timezone(timedelta(hours=9))
WHEN = datetime(2026, 12, 1, 20, 28, 30, tzinfo=timezone.utc)


@pytest.fixture
def panel_in_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_stamp_is_read_in_the_zone_it_was_written_in(panel_in_utc: None) -> None:
    naive = WHEN.astimezone(TOKYO).replace(tzinfo=None).isoformat()  # as Intel's saver writes it in Tokyo
    assert timestamp(naive, TOKYO) == WHEN.timestamp()
    assert timestamp(WHEN.astimezone(TOKYO).isoformat()) == WHEN.timestamp()  # an offset: as it says
    assert timestamp(WHEN.replace(tzinfo=None).isoformat()) == WHEN.timestamp()  # none known: the reader's


def test_the_insight_reads_a_job_in_tokyo_from_a_panel_in_utc(panel_in_utc: None) -> None:
    run = runfolder.create(JobSpec(name="tokyo", device="hpu"), accelerator="hpu")
    begin = {"event": "begin", "time": WHEN.timestamp() - 60, "step": 0, "utc_offset_s": 9 * 3600}
    run.metrics_path.write_text(json.dumps(begin) + "\n")
    stamp = WHEN.astimezone(TOKYO).replace(tzinfo=None).isoformat()
    dump = {"metric_name": "graph_compilation", "triggered_by": "metric_change", "generated_on": stamp,
            "statistics": {"TotalNumber": 1, "TotalTime": 250000, "AvgTime": 250000}}  # fmt: skip
    run.hpu_metrics_path.write_text("[" + json.dumps(dump))
    watcher = InsightWatcher(run)
    watcher.poll(catch_up=True)
    [metrics] = watcher.runtime.ranks().values()
    assert [s.time for s in metrics.compiles] == [WHEN.timestamp()]  # not 9 hours later


def test_the_trainer_callback_writes_its_hosts_zone_into_begin(monkeypatch: pytest.MonkeyPatch) -> None:
    from gaudi_tui.core.jobs.worker.callbacks import MetricsCallback  # imports transformers

    monkeypatch.setenv("TZ", "JST-9")  # POSIX form: no zone database needed
    time.tzset()
    try:
        run = runfolder.create(JobSpec(name="tokyo"), accelerator="cpu")
        callback = MetricsCallback(run, "cpu", cast(Any, None), 1, None, cast(Any, None))
        state = SimpleNamespace(global_step=0, max_steps=10, is_world_process_zero=True)
        callback.on_train_begin(SimpleNamespace(world_size=1, process_index=0), state, None)
        assert callback.out is not None
        callback.out.close()
    finally:
        monkeypatch.undo()
        time.tzset()
    assert job_zone(run.metrics_path) == TOKYO
