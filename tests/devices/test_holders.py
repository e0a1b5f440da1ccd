"""Card holders from /proc: a real child process holding a stand-in node file, found and stopped."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from gaudi_tui.core.devices import holders
from gaudi_tui.core.devices.holders import CardHolder, find_holders
from tests.conftest import PYTHON

HOLD = "import signal, sys, time\n{ignore}f = open(sys.argv[1])\nprint('ready', flush=True)\ntime.sleep(60)\n"


@pytest.fixture
def node_dir(tmp_path: Path) -> Path:
    accel = tmp_path / "dev" / "accel"
    accel.mkdir(parents=True)
    for name in ("accel3", "accel_controlD3", "accel5"):
        (accel / name).touch()
    (tmp_path / "dev" / "hl1").touch()
    return tmp_path / "dev"


def pattern(node_dir: Path) -> str:
    return rf"^{re.escape(str(node_dir))}/(?:accel/accel|hl)(\d+)$"


def hold(path: Path, ignore_term: bool = False) -> subprocess.Popen[str]:
    ignore = "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else ""
    child = subprocess.Popen(
        [PYTHON, "-c", HOLD.format(ignore=ignore), str(path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


def test_holders_are_found_with_pid_user_command_and_start(node_dir: Path) -> None:
    before = time.time()
    children = [
        hold(node_dir / "accel" / "accel3"),
        hold(node_dir / "hl1"),
        hold(node_dir / "accel" / "accel_controlD3"),
    ]
    try:
        found = find_holders(node_pattern=pattern(node_dir))
    finally:
        for child in children:
            child.kill()
            child.wait()
    by_pid = {h.pid: h for h in found}
    assert set(by_pid) == {children[0].pid, children[1].pid}  # the control node is not a compute node
    three, one = by_pid[children[0].pid], by_pid[children[1].pid]
    assert (three.index, three.device_path) == (3, str(node_dir / "accel" / "accel3"))
    assert (one.index, one.device_path) == (1, str(node_dir / "hl1"))
    assert three.user is not None and three.command.startswith(PYTHON)
    assert three.started is not None and before - 5 < three.started < time.time() + 5


def test_default_pattern_matches_the_real_device_nodes() -> None:
    compiled = re.compile(holders.DEFAULT_NODE_PATTERN)
    assert compiled.match("/dev/accel/accel7").group(1) == "7"  # type: ignore[union-attr]
    assert compiled.match("/dev/hl0").group(1) == "0"  # type: ignore[union-attr]
    assert compiled.match("/dev/accel/accel_controlD7") is None
    assert compiled.match("/dev/hl_controlD0") is None


def test_term_stops_a_holder(node_dir: Path) -> None:
    child = hold(node_dir / "accel" / "accel5")
    (holder,) = find_holders(node_pattern=pattern(node_dir))
    assert holders.can_signal(holder) is None
    assert holders.send(holder, signal.SIGTERM) is None
    child.wait(5)  # reap it, as its parent; wait_gone also accepts a zombie
    assert holders.wait_gone(holder, 5)


def test_kill_stops_a_holder_that_ignores_term(node_dir: Path) -> None:
    child = hold(node_dir / "accel" / "accel5", ignore_term=True)
    try:
        (holder,) = find_holders(node_pattern=pattern(node_dir))
        assert holders.send(holder, signal.SIGTERM) is None
        assert not holders.wait_gone(holder, 0.5)
        assert holders.send(holder, signal.SIGKILL) is None
        assert holders.wait_gone(holder, 5)
    finally:
        child.kill()
        child.wait()


def test_someone_elses_process_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    me = CardHolder(0, os.getpid(), "x", "python", holders.start_time(os.getpid()), "/dev/accel/accel0")
    monkeypatch.setattr(os, "getuid", lambda: 54321)
    reason = holders.can_signal(me)
    assert reason is not None and "only that user or root can stop it" in reason
    assert holders.send(me, signal.SIGTERM) == reason


def test_a_reused_pid_is_refused() -> None:
    me = CardHolder(0, os.getpid(), "x", "python", 12.0, "/dev/accel/accel0")
    assert "different process" in (holders.can_signal(me) or "")


def test_an_exited_holder_is_reported() -> None:
    child = subprocess.Popen([PYTHON, "-c", "pass"])
    child.wait()
    gone = CardHolder(0, child.pid, "x", "python", None, "/dev/accel/accel0")
    assert "already exited" in (holders.can_signal(gone) or "")


def test_a_holder_without_a_start_time_is_refused_with_the_reason() -> None:
    sleeper = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(30)"])
    try:
        unknown = CardHolder(0, sleeper.pid, "x", "python", None, "/dev/accel/accel0")
        reason = holders.can_signal(unknown)
        assert reason is not None and "could not be read" in reason and "same process" in reason
        assert holders.send(unknown, signal.SIGTERM) == reason
        assert sleeper.poll() is None  # nothing was sent
    finally:
        sleeper.kill()
        sleeper.wait(5)
