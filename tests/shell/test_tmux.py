"""A real terminal: tmux runs gaudi-tui at 100×30, keys switch screens, q exits 0."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import PYTHON, child_env

NEEDS_TMUX = pytest.mark.usefixtures("tmux_installed")  # tests/conftest.py: required under CI
pytestmark = [pytest.mark.slow, NEEDS_TMUX]


def socket_name(kind: str, tmp_path: Path) -> str:
    """A private tmux socket's name, this test's alone: the test's folder name repeats across
    pytest-xdist workers (each numbers its own), so the worker's PID is in it too."""
    return f"gaudi-tui-{kind}-{os.getpid()}-{tmp_path.name}"


class Tmux:
    """One tmux server on a private socket, one window running a command."""

    def __init__(self, socket: str, env: dict[str, str]) -> None:
        self.socket = socket
        self.env = env

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, env=self.env
        )
        return done.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "panel")

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = self.screen()
            if text in shown:
                return shown
            time.sleep(0.1)
        raise AssertionError(f"{text!r} did not appear; screen was:\n{self.screen()}")

    def wait_gone(self, text: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while text in self.screen():
            assert time.monotonic() < deadline, f"{text!r} is still shown"
            time.sleep(0.1)


@pytest.fixture
def tmux(tmp_path: Path):
    env = child_env(TERM="xterm-256color")
    server = Tmux(socket_name("test", tmp_path), env)
    yield server
    server.run("kill-server")


def start(tmux: Tmux, tmp_path: Path, extra_env: str = "") -> Path:
    exit_file = tmp_path / "exit-code"
    command = (
        f"{extra_env} {shlex.quote(PYTHON)} -m gaudi_tui; echo $? > {shlex.quote(str(exit_file))}; sleep 60"
    )
    tmux.run("new-session", "-d", "-s", "panel", "-x", "100", "-y", "30", command)
    return exit_file


def wait_exit(exit_file: Path, timeout: float = 15.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if exit_file.exists() and exit_file.read_text().strip():
            return int(exit_file.read_text())
        time.sleep(0.1)
    raise AssertionError("gaudi-tui did not exit")


@pytest.mark.parametrize("term", ["xterm-256color", "xterm NO_COLOR=1"])
def test_keys_walk_every_screen_and_q_exits_zero(tmux: Tmux, tmp_path: Path, term: str) -> None:
    term_name, *rest = term.split()
    exit_file = start(tmux, tmp_path, f"TERM={term_name} {' '.join(rest)}")
    tmux.wait_for(" gaudi-tui  Devices ")  # the header: app name, then the screen's title
    for key, title in (("2", "Checklist"), ("3", "Chat"), ("4", "Training"), ("1", "Devices")):
        tmux.run("send-keys", "-t", "panel", key)
        tmux.wait_for(f" gaudi-tui  {title} ")
    tmux.wait_for("cpu: ")  # the probe finished and the header says why
    tmux.run("send-keys", "-t", "panel", "?")
    tmux.wait_for("Help — Devices")
    tmux.run("send-keys", "-t", "panel", "Escape")
    tmux.wait_gone("Help — Devices")
    tmux.run("send-keys", "-t", "panel", "q")
    assert wait_exit(exit_file) == 0
