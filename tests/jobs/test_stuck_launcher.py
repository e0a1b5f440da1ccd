"""A launcher that survives SIGKILL (stuck in the kernel or the driver): the supervisor gives up on
it within its bound, says which PID was left behind, and resume refuses while it exists.

A real stuck process: the launcher is put in a frozen cgroup-v1 freezer group, where a SIGKILL
stays pending (the process shows state D) until the group is thawed. Skips where the freezer
cannot be written (not root, no cgroup v1 freezer).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.targets.local import STUCK_S
from tests.conftest import CPU
from tests.jobs.conftest import last_step, tiny, wait_done, wait_for

FREEZER = Path("/sys/fs/cgroup/freezer")


@pytest.fixture
def freezer() -> Iterator[Path]:
    group = FREEZER / f"gaudi-tui-test-{secrets.token_hex(4)}"
    try:
        group.mkdir()
    except OSError as exc:
        pytest.skip(f"no writable cgroup v1 freezer at {FREEZER} ({exc.strerror})")
    try:
        yield group
    finally:
        (group / "freezer.state").write_text("THAWED")
        procs = [psutil.Process(int(p)) for p in (group / "cgroup.procs").read_text().split() if p]
        psutil.wait_procs(procs, timeout=10)
        group.rmdir()


@pytest.mark.slow
def test_a_launcher_that_survives_sigkill_ends_the_attempt_within_the_bound(freezer: Path) -> None:
    run = control.submit(tiny(max_steps=100_000, kill_grace_s=1.0), CPU)
    wait_for(lambda: last_step(run) >= 1, 120, "the first metrics")
    status = run.status()
    assert status is not None and status.launcher is not None
    (freezer / "cgroup.procs").write_text(str(status.launcher.pid))
    (freezer / "freezer.state").write_text("FROZEN")
    wait_for(lambda: (freezer / "freezer.state").read_text().strip() == "FROZEN", 10, "the freeze")

    start = time.monotonic()
    assert control.kill(run).startswith("killing")
    assert wait_done(run, 1.0 + STUCK_S + 20) == "cancelled"
    assert time.monotonic() - start < 1.0 + STUCK_S + 20
    final = run.status()
    assert final is not None and final.error is not None
    assert f"PID {status.launcher.pid}" in final.error and "survived SIGKILL" in final.error
    assert final.supervisor is not None
    wait_for(lambda: not final.supervisor.alive(), 10, "the supervisor to exit")  # type: ignore[union-attr]
    assert status.launcher.alive()  # still there, frozen with SIGKILL pending
    with pytest.raises(control.JobControlError, match=f"processes still run \\(PID {status.launcher.pid}"):
        control.resume(run)
