"""The Devices screen's first frame (issue 41, start-up): the map with its cards when the CLI's early
hl-smi query has answered while Textual loaded; its skeleton when it has not."""

from __future__ import annotations

import threading
import time

import pytest

from gaudi_tui.core.devices import early_query
from gaudi_tui.core.devices.early_query import EarlyQuery
from gaudi_tui.core.devices.feed import MonitorUpdate
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.devices import DevicesScreen
from gaudi_tui.ui.widgets.device_table import DeviceTable
from tests.conftest import CPU
from tests.devices.conftest import FakeHlSmi
from tests.devices.test_devices_screen import HOST, NoDetails, text
from tests.pilot import settle


class SilentFeed:
    """A device feed that never answers: what the map shows can only come from the early query."""

    def __init__(self, cancel: threading.Event) -> None:
        self.cancel = cancel

    def run(self) -> None:
        self.cancel.wait()


def silent_app(early: EarlyQuery | None) -> GaudiApp:
    def screen() -> DevicesScreen:
        return DevicesScreen(
            feed=lambda on_update, cancel: SilentFeed(cancel),
            host_reader=lambda: HOST,
            details=lambda devices, on_details, cancel, hlml: NoDetails(cancel),
        )

    class App(GaudiApp):
        MODES = {**GaudiApp.MODES, "devices": screen}

    return App(accelerator=CPU, hostname="gaudi-host", early=early)


def answered(early: EarlyQuery, timeout: float = 20.0) -> str:
    """Wait until hl-smi has ended (the state the first frame needs), then its answer."""
    deadline = time.monotonic() + timeout
    while (answer := early.ready_answer()) is None:
        assert time.monotonic() < deadline, "the early hl-smi query did not end"
        time.sleep(0.02)
    return answer


async def test_an_early_answer_is_the_first_frame_s_map(fake_hl_smi: FakeHlSmi) -> None:
    early = early_query.start()
    assert early is not None
    answered(early)
    app = silent_app(early)
    async with app.run_test(size=(120, 36)):
        table = app.screen.query_one(DeviceTable)
        assert table.row_count == 8
        assert text(app, "#devices-status").splitlines()[-1].startswith("8 cards via hl-smi")


async def test_without_an_answer_yet_the_first_frame_is_the_skeleton(fake_hl_smi: FakeHlSmi) -> None:
    fake_hl_smi.set(fault="hang")  # still running when the screen is composed
    early = early_query.start()
    assert early is not None and early.ready_answer() is None
    app = silent_app(early)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            assert "0 cards via none" in text(app, "#devices-status")
            assert not app.screen.query(DeviceTable) or app.screen.query_one(DeviceTable).row_count == 0
    finally:
        early.close()


def test_the_feed_shows_the_answer_the_screen_drew_without_asking_again(fake_hl_smi: FakeHlSmi) -> None:
    from gaudi_tui.core.devices.monitor import DeviceMonitor, MonitorConfig

    early = early_query.start()
    assert early is not None
    answered(early)  # what the screen did while composing
    updates: list[MonitorUpdate] = []
    cancel = threading.Event()
    monitor = DeviceMonitor(MonitorConfig(), updates.append, cancel, host_reader=lambda: HOST, early=early)
    thread = threading.Thread(target=monitor.run)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not any(u.snapshot.hl_smi_version for u in list(updates)):
            assert time.monotonic() < deadline, updates[-1:]
            time.sleep(0.02)
    finally:
        cancel.set()
        thread.join(10)
    assert len(updates[0].snapshot.devices) == 8 and updates[0].snapshot.hl_smi_version is None
    one_shot_queries = [
        args for _, args in fake_hl_smi.starts() if args.startswith("-Q ") and " -l " not in args
    ]
    assert len(one_shot_queries) == 1  # the early one: the feed did not ask again


async def test_a_restarted_feed_asks_hl_smi_anew(
    fake_hl_smi: FakeHlSmi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`r` starts a new feed: the early answer (taken at start-up) is not its first picture."""
    from gaudi_tui.core.devices import monitor

    given: list[EarlyQuery | None] = []

    class Recording(monitor.DeviceMonitor):
        def __init__(self, *args: object, early: EarlyQuery | None = None, **kwargs: object) -> None:
            given.append(early)
            super().__init__(*args, early=early, **kwargs)  # type: ignore[arg-type]

        def run(self) -> None:
            self.cancel.wait()

    monkeypatch.setattr(monitor, "DeviceMonitor", Recording)
    early = early_query.start()
    assert early is not None

    def screen() -> DevicesScreen:
        return DevicesScreen(
            host_reader=lambda: HOST, details=lambda devices, on_details, cancel, hlml: NoDetails(cancel)
        )

    class App(GaudiApp):
        MODES = {**GaudiApp.MODES, "devices": screen}

    app = App(accelerator=CPU, hostname="gaudi-host", early=early)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot, lambda: len(given) == 1, what="the first feed")
            await pilot.press("r")
            await settle(pilot, lambda: len(given) == 2, what="the restarted feed")
    finally:
        early.close()
    assert given == [early, None]


def test_a_stale_early_answer_is_not_used(fake_hl_smi: FakeHlSmi, monkeypatch: pytest.MonkeyPatch) -> None:
    early = early_query.start()
    assert early is not None
    answered(early)
    monkeypatch.setattr(early_query, "FRESH_S", 0.0)
    assert early.ready_answer() is None and early.take("hl-smi") is None
