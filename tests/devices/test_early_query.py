"""The Devices map's first picture (issue 41, start-up): one `hl-smi -Q` query, started by the CLI
before Textual loads, read by the feed before the table and `topo`; never left running."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaudi_tui.core.devices import early_query
from gaudi_tui.core.devices.monitor import MonitorConfig
from tests.devices.conftest import FakeHlSmi
from tests.devices.test_monitor import Run


def one_shots(fake: FakeHlSmi) -> list[tuple[int, str]]:
    """The fake's starts other than the `-l` loop, in order."""
    return [(pid, args) for pid, args in fake.starts() if " -l " not in f" {args} "]


def test_the_first_picture_is_one_query_read_before_the_table(fake_hl_smi: FakeHlSmi) -> None:
    run = Run(MonitorConfig())
    try:
        first = run.wait_for(lambda u: len(u.snapshot.devices) == 8)
        starts = one_shots(fake_hl_smi)
        later = run.wait_for(lambda u: bool(u.snapshot.hl_smi_version), after=run.position)
    finally:
        run.stop()
    assert first.snapshot.hl_smi_version is None  # the table (versions) is read after it
    assert first.snapshot.devices[0].power_cap_w is not None  # the CSV's own columns are there
    assert starts[0][1].startswith("-Q index,")  # before the table ("") and `topo`
    assert later.snapshot.driver_version == first.snapshot.driver_version


def test_the_feed_reads_the_early_query_and_asks_no_other(fake_hl_smi: FakeHlSmi) -> None:
    early = early_query.start()
    assert early is not None and early._child is not None
    pid = early._child.pid
    run = Run(MonitorConfig(), early=early)
    try:
        run.wait_for(lambda u: len(u.snapshot.devices) == 8 and bool(u.snapshot.hl_smi_version))
    finally:
        run.stop()
    queries = [pid for pid, args in one_shots(fake_hl_smi) if args.startswith("-Q ")]
    assert queries == [pid]
    assert early.take("hl-smi") is None  # given once


def test_a_hanging_hl_smi_is_said_at_once_without_the_table(fake_hl_smi: FakeHlSmi, tmp_path: Path) -> None:
    (tmp_path / "sys" / "module" / "habanalabs").mkdir(parents=True)  # so hl-smi's own fault is said
    fake_hl_smi.set(fault="hang")
    run = Run(MonitorConfig(metadata_timeout=1.0, stall_timeout=60.0, sys_root=str(tmp_path / "sys")))
    try:
        update = run.wait_for(lambda u: bool(u.faults))
    finally:
        run.stop()
    assert update.faults[0].code == "hl-smi-hang"
    assert [args.split(" ")[0] for _, args in one_shots(fake_hl_smi)] == ["-Q"]  # no table, no topo


def test_an_early_query_not_taken_is_ended(fake_hl_smi: FakeHlSmi, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_hl_smi.set(fault="hang")  # a child that would never end by itself
    unused = early_query.start()
    assert unused is not None and unused._child is not None
    child = unused._child
    unused.close()
    assert child.poll() is not None
    stale = early_query.start()
    assert stale is not None and stale._child is not None
    child = stale._child
    monkeypatch.setattr(early_query, "FRESH_S", 0.0)
    assert stale.take("hl-smi") is None and child.poll() is not None  # too old: ended, not read
    other = early_query.start()
    assert other is not None and other._child is not None
    child = other._child
    assert other.take("/opt/habana/bin/hl-smi") is None and child.poll() is not None


def test_no_early_query_where_the_feed_reads_hlml_or_has_no_hl_smi(
    fake_hl_smi: FakeHlSmi, fake_modules: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert early_query.start() is None  # the fake pyhlml is importable: the feed reads HLML
    monkeypatch.setattr(early_query, "find_spec", lambda name: None)
    assert early_query.start("no-such-hl-smi") is None
    assert fake_hl_smi.starts() == []
