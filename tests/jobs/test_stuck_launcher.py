"""A launcher that survives SIGKILL (stuck in the kernel or the driver): the supervisor gives up on
it within its bound, says which PID was left behind, and resume refuses while it exists.

A real process that survives SIGKILL, held one of two ways:
- `cgroup-v1`: in a frozen cgroup-v1 freezer group a SIGKILL stays pending (state D) until the group
  is thawed;
- `ptrace`: seized with PTRACE_O_TRACEEXIT, a SIGKILLed process stops at its exit (state t) and
  stays until its tracer lets it go. This is the way on a cgroup-v2-only host (Debian 12): a v2
  freeze (`cgroup.freeze`) lets fatal signals through, so a frozen process dies at once.
Each way the host offers runs; where none works (not root, Yama forbids ptrace) the test skips, and
fails under CI (tests/required.py: the `freezer` component).
"""

from __future__ import annotations

import ctypes
import os
import secrets
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.targets.local import STUCK_S
from tests.conftest import CPU
from tests.jobs.conftest import last_step, tiny, wait_done, wait_for
from tests.required import require

FREEZER = Path("/sys/fs/cgroup/freezer")
PTRACE_SEIZE, PTRACE_DETACH, PTRACE_O_TRACEEXIT = 0x4206, 17, 0x40


class FrozenGroup:
    """A cgroup-v1 freezer group: what it holds keeps a SIGKILL pending until it is thawed."""

    def __init__(self) -> None:
        self.group = FREEZER / f"gaudi-tui-test-{secrets.token_hex(4)}"
        try:
            self.group.mkdir()
        except OSError as exc:
            require("freezer", f"no writable cgroup v1 freezer at {FREEZER} ({exc.strerror})")

    def hold(self, pid: int) -> None:
        (self.group / "cgroup.procs").write_text(str(pid))
        (self.group / "freezer.state").write_text("FROZEN")
        wait_for(lambda: (self.group / "freezer.state").read_text().strip() == "FROZEN", 10, "the freeze")

    def release(self) -> None:
        (self.group / "freezer.state").write_text("THAWED")
        procs = [psutil.Process(int(p)) for p in (self.group / "cgroup.procs").read_text().split() if p]
        psutil.wait_procs(procs, timeout=10)
        self.group.rmdir()


class ExitStop:
    """A process seized with PTRACE_O_TRACEEXIT: killed, it stops before it exits, until detached.
    (ptrace calls come from the thread that seized, the test's.)"""

    def __init__(self) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        self.pid: int | None = None

    def hold(self, pid: int) -> None:
        if self.libc.ptrace(PTRACE_SEIZE, pid, None, ctypes.c_void_p(PTRACE_O_TRACEEXIT)) != 0:
            require("freezer", f"cannot ptrace the launcher ({os.strerror(ctypes.get_errno())})")
        self.pid = pid

    def release(self) -> None:
        if self.pid is None:
            return
        pid = self.pid
        try:
            os.kill(pid, signal.SIGKILL)  # already killed where the test passed; then it stops at its exit
            wait_for(lambda: _state(pid) in ("t", ""), 10, "the exit stop")
        finally:
            self.libc.ptrace(PTRACE_DETACH, pid, None, None)
        wait_for(lambda: _state(pid) in ("Z", ""), 10, "the launcher to end")


def _state(pid: int) -> str:
    """The one-letter state of `pid` in /proc ("" once it is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


HOLDS = ["cgroup-v1"] if os.access(FREEZER, os.W_OK) else []
HOLDS.append("ptrace")


@pytest.fixture(params=HOLDS)
def stuck(request: pytest.FixtureRequest) -> Iterator[FrozenGroup | ExitStop]:
    """What keeps the launcher alive through SIGKILL (each way this host offers)."""
    holder: FrozenGroup | ExitStop = FrozenGroup() if request.param == "cgroup-v1" else ExitStop()
    try:
        yield holder
    finally:
        holder.release()


@pytest.mark.slow
def test_a_launcher_that_survives_sigkill_ends_the_attempt_within_the_bound(
    stuck: FrozenGroup | ExitStop,
) -> None:
    run = control.submit(tiny(max_steps=100_000, kill_grace_s=1.0), CPU)
    wait_for(lambda: last_step(run) >= 1, 120, "the first metrics")
    status = run.status()
    assert status is not None and status.launcher is not None
    stuck.hold(status.launcher.pid)

    start = time.monotonic()
    assert control.kill(run).startswith("killing")
    assert wait_done(run, 1.0 + STUCK_S + 20) == "cancelled"
    assert time.monotonic() - start < 1.0 + STUCK_S + 20
    final = run.status()
    assert final is not None and final.error is not None
    assert f"PID {status.launcher.pid}" in final.error and "survived SIGKILL" in final.error
    assert final.supervisor is not None
    wait_for(lambda: not final.supervisor.alive(), 10, "the supervisor to exit")  # type: ignore[union-attr]
    assert status.launcher.alive()  # still there, held with SIGKILL pending
    with pytest.raises(control.JobControlError, match=f"processes still run \\(PID {status.launcher.pid}"):
        control.resume(run)
