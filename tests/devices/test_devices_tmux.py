"""A real terminal: gaudi-tui in tmux against the fake hl-smi — live refreshes, choosing a card,
a dying hl-smi's banner, and no hl-smi left behind after q."""

from __future__ import annotations

import os
import re
import shlex
import time
from pathlib import Path

import pytest

from tests.conftest import PYTHON, SAMPLES
from tests.devices.conftest import FAKE_BIN
from tests.shell.test_tmux import NEEDS_TMUX, Tmux, start, tmux, wait_exit  # noqa: F401 (tmux is a fixture)

pytestmark = [pytest.mark.slow, NEEDS_TMUX]

BUSY, IDLE = "gaudi2-hl225-x8-1.20.0-busy-table.txt", "gaudi2-hl225-x8-1.12.1-table.txt"
BUSY_REFRESHES = 24
BUSY_THEN_IDLE = ",".join([IDLE] + [BUSY] * BUSY_REFRESHES)
"""Refreshes 1-24 busy (12 s at 0.5 s), then idle for good (FAKE_HLSMI_HOLD replays the first
sample): each state lasts long enough to be seen on a loaded machine. A busy/idle swap at every
refresh could be missed for good: a panel drawing at a multiple of the period sees one phase."""


def fake_env(log: Path, **fake: str) -> str:
    path = os.pathsep.join([str(FAKE_BIN), str(Path(PYTHON).parent), os.environ["PATH"]])
    env = {"PATH": path, "FAKE_HLSMI_SAMPLES_DIR": str(SAMPLES), "FAKE_HLSMI_LOG": str(log)}
    env.update({f"FAKE_HLSMI_{k.upper()}": v for k, v in fake.items()})
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())


def pids(log: Path) -> list[int]:
    return [int(line.split()[0]) for line in log.read_text().splitlines() if " -l " in line]


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_row(tmux: Tmux, pattern: str, timeout: float = 20.0) -> str:  # noqa: F811
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = tmux.screen()
        if any(re.match(pattern, line) for line in screen.splitlines()):
            return screen
        time.sleep(0.1)
    raise AssertionError(f"no row like {pattern!r}:\n{tmux.screen()}")


def test_live_map_choose_a_card_and_quit_without_orphans(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    log = tmp_path / "hl-smi.log"
    exit_file = start(
        tmux, tmp_path, fake_env(log, sample=BUSY_THEN_IDLE, period="0.5", hold=str(BUSY_REFRESHES + 1))
    )
    tmux.wait_for("8 cards via hl-smi")
    tmux.wait_for("driver 1.12.1-cb7a7bc")  # the fake's driver is its first sample's (the idle one)
    wait_row(tmux, r"\s+3\s+7\s+0%\s+\S+\s+94/96G")  # busy refresh … (100 columns: no product column)
    wait_row(tmux, r"\s+3\s+7\s+0%\s+\S+\s+0\.8/96G")  # … then idle: the map is live
    tmux.run("send-keys", "-t", "panel", "Space")
    tmux.wait_for("export HABANA_VISIBLE_MODULES=2 HABANA_VISIBLE_DEVICES=0")
    tmux.run("send-keys", "-t", "panel", "q")
    assert wait_exit(exit_file) == 0
    (child,) = pids(log)
    assert not running(child)
    first, *_ = log.read_text().splitlines()
    assert first.split(" ", 2)[1] == "-Q" and " -l " not in first  # the CLI's query, before Textual
    assert not [line for line in log.read_text().splitlines() if running(int(line.split()[0]))]


def test_a_dying_hl_smi_shows_a_banner_and_the_panel_stays_usable(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    log = tmp_path / "hl-smi.log"
    exit_file = start(tmux, tmp_path, fake_env(log, fault="die", after="1", period="0.2"))
    # No /sys/module/habanalabs here, so the banner blames the driver and quotes hl-smi.
    screen = tmux.wait_for("kernel driver is not loaded")
    assert "with code 1" in screen and "modprobe habanalabs" in screen
    tmux.run("send-keys", "-t", "panel", "2")
    tmux.wait_for("Checklist — ")
    tmux.run("send-keys", "-t", "panel", "1")
    tmux.wait_for("8 cards via hl-smi")
    deadline = time.monotonic() + 15
    while len(pids(log)) < 2:  # restarted after dying, with backoff
        assert time.monotonic() < deadline, "hl-smi was not restarted"
        time.sleep(0.1)
    tmux.run("send-keys", "-t", "panel", "q")
    assert wait_exit(exit_file) == 0
    assert not any(running(pid) for pid in pids(log))


def test_the_host_row_stays_live_while_hl_smi_hangs(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    """hl-smi never prints (the metadata reads wait out their 10 s, then the loop stalls): the host row still
    appears within seconds and keeps refreshing."""
    log = tmp_path / "hl-smi.log"
    exit_file = start(tmux, tmp_path, fake_env(log, fault="hang", after="0"))  # never prints
    began = time.monotonic()
    tmux.wait_for("host: CPU", timeout=8.0)  # FIRST_HOST_S (3 s) after the screen mounts
    rows: set[str] = set()
    while time.monotonic() - began < 15.0:
        screen = tmux.screen()
        rows.update(line.strip() for line in screen.splitlines() if "host: CPU" in line)
        assert "cards via hl-smi" not in screen  # hl-smi has not answered
        time.sleep(0.25)
    assert pids_any(log), "the panel did not try hl-smi"
    assert len(rows) >= 2, f"the host row did not change in 15 s: {rows}"  # CPU % and load move
    tmux.run("send-keys", "-t", "panel", "q")
    assert wait_exit(exit_file) == 0
    assert not any(running(int(line.split()[0])) for line in log.read_text().splitlines())


def pids_any(log: Path) -> bool:
    return log.exists() and bool(log.read_text().strip())
