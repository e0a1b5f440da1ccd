"""The hl-smi poller goes on past a refresh whose handling raises (issue 38, A.4): the raise ended
the poller's thread, and with it the card feed of Devices, `devices --watch`, `watch` and the
exporter, without a word. Now it is logged once, shown as a fault, and the next refreshes come.
The feed's handler is made to raise for the first refreshes on purpose (a consumer's bug: any
exception); the child is the fake hl-smi replaying recorded samples (tests/fakes/bin/hl-smi)."""

from __future__ import annotations

import logging

import pytest

from gaudi_tui.core.devices.reading import Reading
from tests.devices.conftest import FakeHlSmi
from tests.devices.test_hlsmi_poller import BUSY, Recorder, start, stop


def test_refreshes_go_on_after_some_whose_handling_raised(
    fake_hl_smi: FakeHlSmi, caplog: pytest.LogCaptureFixture
) -> None:
    fake_hl_smi.set(sample=BUSY, period="0.1")
    recorder = Recorder()
    handed: list[Reading] = []

    def flaky(reading: Reading) -> None:
        handed.append(reading)
        if len(handed) <= 3:
            raise ValueError("a consumer's bug")
        recorder.readings.append(reading)

    with caplog.at_level(logging.ERROR, logger="gaudi_tui.core.devices.sources.hlsmi"):
        poller, thread = start(recorder)
        poller.on_reading = flaky
        try:
            recorder.wait_for(lambda: len(recorder.readings) >= 2 or not thread.is_alive())
            assert thread.is_alive(), "the poller's thread ended at a refresh that raised"
        finally:
            stop(recorder, thread)
    assert len(recorder.readings[0].devices) == 8 and poller.starts == 1  # the same child read on
    assert [r.getMessage() for r in caplog.records] == [
        "hl-smi poller: a refresh could not be handled (the next ones are)"
    ]
    shown = {fault.what for fault, _ in recorder.faults}
    assert shown == {"a card refresh could not be shown (ValueError: a consumer's bug)"}
