"""The replay source: recorded real hl-smi outputs (gaudi_tui/data/hl-smi) read through the
`devices --input` path, cycled as a feed; gaudi3 refused (no real recording exists)."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest

from gaudi_tui.core.devices.monitor import MonitorUpdate
from gaudi_tui.core.devices.sources.replay import REPLAYS, ReplayError, ReplayFeed, resolve, snapshots
from gaudi_tui.data import HLSMI_SAMPLES
from tests.conftest import PYTHON, child_env


@pytest.mark.parametrize("name", sorted(REPLAYS))
def test_every_shipped_replay_reads_eight_real_cards(name: str) -> None:
    frames = snapshots(resolve(name))
    assert len(frames) == len(REPLAYS[name])
    for frame, files in zip(frames, REPLAYS[name], strict=True):
        assert frame.source == "replay" and len(frame.devices) == 8
        assert frame.recordings == files and all((HLSMI_SAMPLES / f).is_file() for f in files)


def test_gaudi2_frames_differ_and_carry_module_ids_and_numa() -> None:
    idle, process, busy = snapshots(resolve("gaudi2"))
    assert all(d.product == "Gaudi 2" and d.module_id is not None for d in busy.devices)
    assert [d.memory_used_mib for d in idle.devices] != [d.memory_used_mib for d in busy.devices]
    assert busy.hl_smi_version == "hl-1.20.0-fw-58.1.1.1" and busy.processes
    assert {d.numa_node for d in busy.devices} == {0, 1}


def test_gaudi3_is_refused_naming_what_exists() -> None:
    with pytest.raises(ReplayError) as raised:
        resolve("gaudi3")
    message = str(raised.value)
    assert "no real Gaudi 3 hl-smi recording" in message
    assert all(name in message for name in REPLAYS)


def test_a_file_replays_and_a_bad_one_says_why(tmp_path) -> None:
    (frame,) = snapshots(resolve(str(HLSMI_SAMPLES / "gaudi2e-hl288e-x8-1.24.0-table.txt")))
    assert frame.devices[0].product == "Gaudi 2E"
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\n")
    with pytest.raises(ReplayError, match="not an hl-smi output"):
        snapshots(resolve(str(junk)))
    with pytest.raises(ReplayError, match="neither a replay nor a file"):
        resolve(str(tmp_path / "missing.txt"))


def test_the_feed_cycles_through_the_frames_until_cancelled() -> None:
    frames = snapshots(resolve("gaudi2"))
    seen: list[MonitorUpdate] = []
    cancel = threading.Event()

    def on_update(update: MonitorUpdate) -> None:
        seen.append(update)
        if len(seen) == 5:
            cancel.set()

    thread = threading.Thread(target=ReplayFeed(frames, 0.01, on_update, cancel).run)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    assert [u.snapshot for u in seen] == [frames[0], frames[1], frames[2], frames[0], frames[1]]
    assert seen[-1].host is not None and seen[-1].holders == ()


def run_cli(*args: str, home) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "gaudi_tui.cli", *args],
        env=child_env(GAUDI_TUI_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_devices_json_marks_the_replay(gaudi_home) -> None:
    done = run_cli("devices", "--replay", "gaudi2", "--json", home=gaudi_home)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["source"] == "replay" and data["recordings"] == list(REPLAYS["gaudi2"][0])
    text = run_cli("devices", "--replay", "gaudi2e", home=gaudi_home).stdout
    assert text.startswith("replay of gaudi2e-hl288e-x8-1.24.0-table.txt") and "Gaudi 2E" in text


def test_panel_refuses_gaudi3_before_opening(gaudi_home) -> None:
    done = run_cli("--replay", "gaudi3", home=gaudi_home)
    assert done.returncode == 2 and done.stdout == ""
    assert "no real Gaudi 3 hl-smi recording" in done.stderr and "gaudi2e" in done.stderr


def test_replay_goes_with_the_panel_not_a_command(gaudi_home) -> None:
    done = run_cli("--replay", "gaudi2", "config", home=gaudi_home)
    assert done.returncode == 2 and "for a command use `gaudi-tui devices --replay NAME`" in done.stderr
