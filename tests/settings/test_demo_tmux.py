"""A real terminal: `gaudi-tui --replay gaudi2` (what `make demo` runs) at 80×24 with a
config.toml that sets a theme and remaps help to F1; q exits 0."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import pytest

from gaudi_tui.core import settings
from tests.conftest import PYTHON
from tests.shell.test_tmux import NEEDS_TMUX, Tmux, tmux, wait_exit  # noqa: F401 (tmux is a fixture)

pytestmark = [pytest.mark.slow, NEEDS_TMUX]


def test_make_demo_shows_a_recorded_host_with_the_users_settings(
    tmux: Tmux,  # noqa: F811
    tmp_path: Path,
    gaudi_home: Path,
) -> None:
    settings.config_path().write_text('theme = "textual-light"\n[keys]\n"app.help" = "f1"\n')
    exit_file = tmp_path / "exit-code"
    command = (
        f"GAUDI_TUI_HOME={shlex.quote(str(gaudi_home))} {shlex.quote(PYTHON)} -m gaudi_tui --replay gaudi2; "
        f"echo $? > {shlex.quote(str(exit_file))}; sleep 60"
    )
    tmux.run("new-session", "-d", "-s", "panel", "-x", "80", "-y", "24", command)
    tmux.wait_for("8 cards via replay")
    screen = tmux.wait_for("Holder")  # the map is mounted just after the first frame
    assert "REPLAY gaudi2" in screen
    screen = tmux.wait_for("busy, holder not visible", timeout=30)  # the third recording
    assert all(len(line.rstrip()) <= 80 for line in screen.splitlines())
    tmux.run("send-keys", "-t", "panel", "?")  # remapped away: nothing happens
    time.sleep(1.0)
    assert "Help —" not in tmux.screen()
    tmux.run("send-keys", "-t", "panel", "F1")
    screen = tmux.wait_for("Help — Devices")
    assert "devices.up" in screen  # each key with its binding id
    tmux.run("send-keys", "-t", "panel", "Escape")
    tmux.wait_gone("Help — Devices")
    tmux.run("send-keys", "-t", "panel", "q")
    assert wait_exit(exit_file) == 0
    assert settings.load(environ={}).settings.theme == "textual-light"  # untouched
