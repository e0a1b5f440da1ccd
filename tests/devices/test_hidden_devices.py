"""The Devices screen while another screen is shown (issue 28): its host row reads nothing, the
cards' uses wait, and both are current at once when it is shown again. The device feed itself runs
on (the panel's card alerts read it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from gaudi_tui.core.devices.feed import MonitorUpdate
from gaudi_tui.core.devices.sources import host
from gaudi_tui.core.devices.sources.host import HostStats, tick_host
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.devices import DevicesScreen
from gaudi_tui.ui.screens.devices_feeds import FeedScreen
from tests.conftest import CPU
from tests.devices.test_devices_screen import HOST, SAMPLE_CYCLE, NoDetails, cell, replayed


def wait_for(check: Callable[[], bool], deadline_s: float = 10.0) -> None:
    end = time.monotonic() + deadline_s
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


class Wakes(threading.Event):
    """The `shown` event, counting the waits the hidden row makes on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waits = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        return super().wait(timeout)


def test_the_host_row_reads_nothing_while_hidden_and_at_once_when_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(host, "HIDDEN_WAKE_S", 0.02)
    reads: list[int] = []
    shown = Wakes()

    def reader() -> HostStats:
        reads.append(shown.waits)  # how many hidden waits came before this read
        return HOST

    cancel = threading.Event()
    thread = threading.Thread(target=tick_host, args=(lambda _s: None, cancel, 0.02, reader, shown))
    thread.start()
    try:
        wait_for(lambda: shown.waits >= 20)  # twenty hidden wakes: a hidden row read in none of them
        assert reads == []
        before = shown.waits
        shown.set()
        wait_for(lambda: len(reads) >= 3)
        assert reads[0] <= before + 1  # at once: the wait under way ends, no further hidden wait
        shown.clear()  # hidden again: a cancel is still seen
    finally:
        cancel.set()
        thread.join(5.0)
    assert not thread.is_alive()


class StepFeed:
    """Posts the update the test hands it, when it hands it."""

    def __init__(self, on_update: Callable[[MonitorUpdate], None], cancel: threading.Event) -> None:
        self.on_update, self.cancel = on_update, cancel

    def run(self) -> None:
        self.cancel.wait()

    def request_holder_scan(self) -> None:
        pass


async def test_a_hidden_devices_screen_merges_no_processes_and_catches_up_when_shown(monkeypatch) -> None:  # noqa: ANN001
    merged: list[MonitorUpdate] = []
    card_uses = FeedScreen._card_uses
    monkeypatch.setattr(FeedScreen, "_card_uses", lambda self, u: merged.append(u) or card_uses(self, u))
    feeds: list[StepFeed] = []

    def feed(on_update: Callable[[MonitorUpdate], None], cancel: threading.Event) -> StepFeed:
        feeds.append(StepFeed(on_update, cancel))
        return feeds[-1]

    def screen() -> DevicesScreen:
        return DevicesScreen(
            feed=feed,
            host_reader=lambda: HOST,
            details=lambda devices, on_details, cancel, hlml: NoDetails(cancel),
        )

    class App(GaudiApp):
        MODES = {**GaudiApp.MODES, "devices": screen}

    idle, busy = replayed(SAMPLE_CYCLE[2]), replayed(SAMPLE_CYCLE[0])
    app = App(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(120, 36)) as pilot:
        while not feeds or not app.screen.query("#devices-table"):
            await pilot.pause(0.05)
        feeds[0].on_update(MonitorUpdate(idle, HOST, ()))
        while not merged:
            await pilot.pause(0.05)
        devices = app.screen
        await pilot.press("4")
        await pilot.pause()
        merged.clear()
        feeds[0].on_update(MonitorUpdate(busy, HOST, ()))
        while (
            not isinstance(devices, DevicesScreen)
            or devices.latest is None
            or devices.latest.snapshot is not busy
        ):
            await pilot.pause(0.05)
        assert merged == []  # hidden: the update is kept, its uses wait
        await pilot.press("1")
        await pilot.pause()
        assert [u.snapshot for u in merged] == [busy]
        assert cell(app, 3, "hbm").strip().startswith("94/96G")  # the busy sample, at once
