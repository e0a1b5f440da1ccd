"""The terminal escapes in a real tmux pane (issue 30 items 3, 6): `gaudi-tui watch` inside tmux
writes the bell and OSC 9 / OSC 777 wrapped in tmux's DCS passthrough (read back raw with
`pipe-pane -O`), tmux flags the window's bell, the pane shows one clean line per alert (no escape
leaks into the text), and a job's alert appended by another process reaches the pane too."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from gaudi_tui.core.alerts import sinks, store
from gaudi_tui.core.alerts.model import Alert
from tests.alerts.conftest import configure, wait_for
from tests.conftest import PYTHON, child_env
from tests.shell.test_tmux import NEEDS_TMUX, Tmux, socket_name

pytestmark = [pytest.mark.slow, NEEDS_TMUX]


@pytest.fixture
def tmux(tmp_path: Path):
    server = Tmux(socket_name("alerts", tmp_path), child_env(TERM="xterm-256color"))
    yield server
    server.run("kill-server")  # only this test's server (its private socket)


def start_piped(tmux: Tmux, tmp_path: Path, program: str, size: tuple[int, int]) -> Path:
    """`program` in session "panel", passthrough on, its raw output piped to the file returned;
    the program starts only once the pipe is on (so none of its output is missed)."""
    raw, go = tmp_path / "pane.raw", tmp_path / "go"
    command = f"while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.05; done; exec {program}"
    tmux.run("new-session", "-d", "-s", "panel", "-x", str(size[0]), "-y", str(size[1]), command)
    tmux.run("set-option", "-g", "allow-passthrough", "on")
    tmux.run("pipe-pane", "-O", "-t", "panel", f"cat >> {shlex.quote(str(raw))}")
    go.touch()
    return raw


def test_watch_in_tmux_rings_and_passes_the_notification_escapes_through(tmux: Tmux, tmp_path: Path) -> None:
    configure(off=["hbm_full"])  # the replay's busy cards are near full too: only the port here
    watch = f"{shlex.quote(PYTHON)} -m gaudi_tui watch --replay gaudi2-port-down --interval 0.1"
    raw = start_piped(tmux, tmp_path, watch, (160, 20))
    tmux.wait_for("CRITICAL Scale-out port down: ")
    (alert,) = store.NotificationReader(from_start=True).poll()
    title, body = "Scale-out port down", alert.text
    expected = (
        "\a"
        f"\x1bPtmux;\x1b\x1b]9;gaudi-tui: {title}: {body}\a\x1b\\"
        f"\x1bPtmux;\x1b\x1b]777;notify;{title};{body}\a\x1b\\"
    )
    assert expected == sinks.escapes(alert, in_tmux=True)
    wait_for(lambda: expected.encode() in raw.read_bytes(), 10, "the escapes in the pane's raw output")
    assert tmux.run("display-message", "-p", "-t", "panel", "#{window_bell_flag}").strip() == "1"
    # a job's alert, from another process (a supervisor), reaches the pane as well
    job = Alert("job_ended", "info", "run-1", "Job succeeded", "tiny (run-1) after 0m03s", "run-1:ended:1")
    store.append(job)
    screen = tmux.wait_for("INFO Job succeeded: tiny (run-1) after 0m03s")
    assert screen.count("Scale-out port down") == 1  # the port stayed down on every frame since: once
    assert "]9;" not in screen and "]777;" not in screen and "tmux;" not in screen
    assert raw.read_bytes().count(b"\x1b]777;notify;") == 2  # each alert's escapes once


def test_outside_tmux_the_escapes_are_not_wrapped_and_the_text_cannot_break_out() -> None:
    alert = Alert("hbm_full", "warning", "h card 3", "HBM; near full", "bad\x1b]0;title\a text", "k")
    assert sinks.escapes(alert, in_tmux=False) == (
        "\a"
        "\x1b]9;gaudi-tui: HBM; near full: bad ]0;title  text\a"
        "\x1b]777;notify;HBM, near full;bad ]0,title  text\a"
    )


def test_the_panel_in_tmux_toasts_a_jobs_alert_and_rings_its_own_terminal(tmux: Tmux, tmp_path: Path) -> None:
    configure(retries=99)  # a bad value: its toast says the panel's alerts have started
    raw = start_piped(tmux, tmp_path, f"{shlex.quote(PYTHON)} -m gaudi_tui", (120, 30))
    tmux.wait_for("alerts.retries must be")
    job = Alert("job_ended", "critical", "run-2", "Job failed", "tiny (run-2) — exit code 3", "run-2:ended:1")
    store.append(job)  # as a supervisor does, from another process
    tmux.wait_for("tiny (run-2) — exit code 3")  # the toast
    wanted = sinks.escapes(job, in_tmux=True).encode()
    wait_for(lambda: wanted in raw.read_bytes(), 10, "the escapes in the panel's raw output")
    assert tmux.run("display-message", "-p", "-t", "panel", "#{window_bell_flag}").strip() == "1"
    tmux.run("send-keys", "-t", "panel", "!")
    tmux.wait_for("Alerts — 1")
    tmux.run("send-keys", "-t", "panel", "Escape")
    tmux.run("send-keys", "-t", "panel", "q")
