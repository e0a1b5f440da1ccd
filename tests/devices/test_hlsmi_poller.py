"""The long-lived hl-smi poller against the fake hl-smi: live refreshes from ONE child, restart
with backoff when it dies, hangs or refuses fields, garbage reported, and no child left behind."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import pytest

from gaudi_tui.core.devices.csv_query import BASIC_FIELDS
from gaudi_tui.core.devices.faults import Fault
from gaudi_tui.core.devices.reading import Reading
from gaudi_tui.core.devices.sources.hlsmi import Backoff, HlSmiPoller
from gaudi_tui.core.devices.sources.hlsmi_once import run_once
from tests.devices.conftest import FakeHlSmi

BUSY = "gaudi2-hl225-x8-1.20.0-busy-table.txt"
IDLE = "gaudi2-hl225-x8-1.12.1-table.txt"


class Recorder:
    def __init__(self) -> None:
        self.readings: list[Reading] = []
        self.faults: list[tuple[Fault, float | None]] = []
        self.cancel = threading.Event()

    def wait_for(self, condition: Callable[[], bool], timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"timed out; faults: {[f.what for f, _ in self.faults]}"
            time.sleep(0.02)


def start(recorder: Recorder, **kwargs: object) -> tuple[HlSmiPoller, threading.Thread]:
    poller = HlSmiPoller(
        "hl-smi",
        1,
        recorder.readings.append,
        lambda fault, pause: recorder.faults.append((fault, pause)),
        recorder.cancel,
        backoff=Backoff(0.05, 0.2),
        **kwargs,  # type: ignore[arg-type]
    )
    thread = threading.Thread(target=poller.run)
    thread.start()
    return poller, thread


def stop(recorder: Recorder, thread: threading.Thread) -> None:
    recorder.cancel.set()
    thread.join(5)
    assert not thread.is_alive()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_live_refreshes_come_from_one_child_and_it_ends_with_the_poller(fake_hl_smi: FakeHlSmi) -> None:
    fake_hl_smi.set(sample=f"{BUSY},{IDLE}", period="0.1")
    recorder = Recorder()
    poller, thread = start(recorder)
    recorder.wait_for(lambda: len(recorder.readings) >= 4)
    stop(recorder, thread)
    first, second = recorder.readings[0], recorder.readings[1]
    assert len(first.devices) == 8
    assert first.devices[3].memory_used_mib == 96565  # the busy sample …
    assert second.devices[3].memory_used_mib == 768  # … then the idle one: values change live
    assert first.devices[0].module_id == 2  # from the index,module_id sample
    assert len(fake_hl_smi.loop_pids()) == 1 and poller.starts == 1
    assert recorder.faults == []
    assert not alive(fake_hl_smi.loop_pids()[0])


def test_a_dying_hl_smi_is_restarted_with_backoff(fake_hl_smi: FakeHlSmi) -> None:
    fake_hl_smi.set(fault="die", after="1", period="0.05")
    recorder = Recorder()
    poller, thread = start(recorder)
    recorder.wait_for(lambda: poller.starts >= 3 and len(recorder.readings) >= 3)
    stop(recorder, thread)
    fault, pause = recorder.faults[0]
    assert fault.code == "hl-smi-exit"
    assert "code 1" in fault.what and "lost connection to the device" in fault.what
    assert pause == 0.05
    assert not any(alive(pid) for pid in fake_hl_smi.loop_pids())


def test_a_hanging_hl_smi_is_ended_and_restarted(fake_hl_smi: FakeHlSmi) -> None:
    fake_hl_smi.set(fault="hang", after="1", period="0.05")
    recorder = Recorder()
    poller, thread = start(recorder, stall_timeout=0.6)
    recorder.wait_for(lambda: any(f.code == "hl-smi-hang" for f, _ in recorder.faults) and poller.starts >= 2)
    stop(recorder, thread)
    assert recorder.readings and len(recorder.readings[0].devices) == 8
    assert not any(alive(pid) for pid in fake_hl_smi.loop_pids())


def test_a_hanging_hl_smi_that_ignores_sigterm_is_killed_not_waited_on(fake_hl_smi: FakeHlSmi) -> None:
    fake_hl_smi.set(fault="hang", after="1", period="0.05", ignore_term="1")
    recorder = Recorder()
    poller, thread = start(recorder, stall_timeout=0.6)
    recorder.wait_for(lambda: any(f.code == "hl-smi-hang" for f, _ in recorder.faults) and poller.starts >= 2)
    began = time.monotonic()
    stop(recorder, thread)  # TERM is ignored: 1 s, then KILL
    assert time.monotonic() - began < 4.0
    assert not any(alive(pid) for pid in fake_hl_smi.loop_pids())


def test_a_one_shot_hl_smi_that_hangs_and_ignores_sigterm_times_out(fake_hl_smi: FakeHlSmi) -> None:
    fake_hl_smi.set(fault="hang", ignore_term="1")
    began = time.monotonic()
    outcome = run_once("hl-smi", [], timeout=0.5)
    assert outcome.fault is not None and outcome.fault.code == "hl-smi-hang"
    assert time.monotonic() - began < 5.0
    assert not any(alive(pid) for pid, _ in fake_hl_smi.starts())


def test_backoff_grows_while_hl_smi_keeps_failing(fake_hl_smi: FakeHlSmi) -> None:
    fake_hl_smi.set(fault="exit", code="3")
    recorder = Recorder()
    _, thread = start(recorder)
    recorder.wait_for(lambda: len(recorder.faults) >= 4)
    stop(recorder, thread)
    pauses = [pause for _, pause in recorder.faults[:4]]
    assert pauses == [0.05, 0.1, 0.2, 0.2]
    assert "habanalabs driver is not loaded" in recorder.faults[0][0].what


def test_garbage_is_reported_not_parsed(fake_hl_smi: FakeHlSmi) -> None:
    fake_hl_smi.set(fault="garbage", period="0.1")
    recorder = Recorder()
    _, thread = start(recorder)
    recorder.wait_for(lambda: len(recorder.faults) >= 1)
    stop(recorder, thread)
    assert recorder.readings == []
    assert recorder.faults[0][0].code == "hl-smi-garbage"
    assert "Segmentation fault" in recorder.faults[0][0].what


def test_an_older_hl_smi_refusing_power_max_gets_the_documented_fields(fake_hl_smi: FakeHlSmi) -> None:
    fake_hl_smi.set(reject="power.max", period="0.1")
    recorder = Recorder()
    poller, thread = start(recorder)
    recorder.wait_for(lambda: len(recorder.readings) >= 1)
    stop(recorder, thread)
    assert poller.fields == BASIC_FIELDS
    assert recorder.readings[0].devices[0].power_cap_w is None
    assert recorder.faults == []


def test_a_failing_hl_smi_keeps_the_full_field_list(fake_hl_smi: FakeHlSmi) -> None:
    fake_hl_smi.set(fault="exit")  # "driver is not loaded": not about the fields
    recorder = Recorder()
    poller, thread = start(recorder)
    recorder.wait_for(lambda: len(recorder.faults) >= 2)
    stop(recorder, thread)
    assert poller.fields != BASIC_FIELDS


def test_missing_hl_smi_ends_the_poller_with_that_fault(no_hl_smi: None) -> None:
    recorder = Recorder()
    poller, thread = start(recorder)
    thread.join(5)
    assert not thread.is_alive()
    assert [f.code for f, _ in recorder.faults] == ["hl-smi-missing"]


@pytest.mark.parametrize("interval", [1, 3])
def test_the_child_is_asked_to_loop_at_the_refresh_interval(fake_hl_smi: FakeHlSmi, interval: int) -> None:
    fake_hl_smi.set(period="0.1")
    recorder = Recorder()
    poller = HlSmiPoller("hl-smi", interval, recorder.readings.append, lambda f, p: None, recorder.cancel)
    thread = threading.Thread(target=poller.run)
    thread.start()
    recorder.wait_for(lambda: bool(recorder.readings))
    stop(recorder, thread)
    (args,) = [a for _, a in fake_hl_smi.starts()]
    assert args.endswith(f"-f csv,noheader,nounits -l {interval}")
