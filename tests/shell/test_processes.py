"""Ending a child with a limit on every wait (core/processes.end_child, end_processes), with real
processes."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time

import psutil
import pytest

from gaudi_tui.core.processes import end_child, end_processes
from tests.conftest import PYTHON

SLEEP = "import time; time.sleep(60)"
IGNORE_TERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(60)"
)


class Unkillable(subprocess.Popen[bytes]):
    """A real child whose signals are not delivered: what a process stuck in the kernel (D state)
    looks like to its parent, which this machine cannot make on purpose."""

    def send_signal(self, sig: int) -> None:
        pass

    def terminate(self) -> None:
        pass

    def kill(self) -> None:
        pass


def test_an_exited_child_is_reaped_without_a_signal() -> None:
    child = subprocess.Popen([PYTHON, "-c", "pass"])
    assert end_child(child, "test child", first_wait=5.0) == "exited"
    assert child.returncode == 0


def test_sigterm_ends_a_child_that_honours_it() -> None:
    child = subprocess.Popen([PYTHON, "-c", SLEEP])
    assert end_child(child, "test child") == "terminated"
    assert child.returncode == -signal.SIGTERM


def test_a_child_ignoring_sigterm_is_killed_after_the_limit() -> None:
    child = subprocess.Popen([PYTHON, "-c", IGNORE_TERM], stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline()  # its handler is installed
    began = time.monotonic()
    assert end_child(child, "test child", term_wait=0.5) == "killed"
    assert child.returncode == -signal.SIGKILL
    assert time.monotonic() - began < 3.0
    child.stdout.close()


def test_a_child_that_will_not_die_is_abandoned_with_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    child = Unkillable([PYTHON, "-c", SLEEP])
    try:
        began = time.monotonic()
        with caplog.at_level(logging.ERROR, logger="gaudi_tui.core.processes"):
            assert end_child(child, "stuck child", term_wait=0.3, kill_wait=0.3) == "abandoned"
        assert time.monotonic() - began < 2.0  # the thread is free again
        assert f"stuck child (PID {child.pid}) is still running after SIGKILL; abandoned" in caplog.text
        assert child.poll() is None
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(5)


def test_processes_that_ignore_term_are_killed_within_the_limits() -> None:
    polite = subprocess.Popen([PYTHON, "-c", SLEEP])
    stubborn = subprocess.Popen([PYTHON, "-c", IGNORE_TERM], stdout=subprocess.PIPE)
    try:
        assert stubborn.stdout is not None and stubborn.stdout.readline()  # its SIGTERM handler is set
        procs = [psutil.Process(polite.pid), psutil.Process(stubborn.pid)]
        assert end_processes(procs, "test process", term_wait=1.0, kill_wait=5.0) == []
        # psutil reaped them and kept how each ended
        assert [proc.returncode for proc in procs] == [-signal.SIGTERM, -signal.SIGKILL]
    finally:
        for child in (polite, stubborn):
            child.kill()
            child.wait(5)
