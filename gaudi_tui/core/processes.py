"""Ending a child process with a limit on every wait: terminate, wait, kill, wait, abandon.

A process stuck in the kernel (a driver call that never returns) ignores even SIGKILL. Waiting for
it without a limit would hold the calling thread forever, so after the last wait it is abandoned
with a log line and the caller shows a banner. Every place that ends a child uses `end_child`.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import psutil

log = logging.getLogger(__name__)

Ending = Literal["exited", "terminated", "killed", "abandoned"]
"""exited: it had already ended (or ended within the first wait); terminated: after SIGTERM;
killed: after SIGKILL; abandoned: still running after SIGKILL and the last wait."""

TERM_WAIT_S = 2.0
KILL_WAIT_S = 2.0


def end_child(
    child: subprocess.Popen[bytes] | subprocess.Popen[str],
    name: str,
    *,
    first_wait: float = 0.0,
    term_wait: float | None = TERM_WAIT_S,
    kill_wait: float = KILL_WAIT_S,
) -> Ending:
    """End `child` and reap it, never waiting longer than the limits in all.

    `first_wait`: how long it may take to end on its own (after a shutdown request, say);
    `term_wait`: how long after SIGTERM, or None to go straight to SIGKILL.
    """
    if _reaped(child, first_wait):
        return "exited"
    if term_wait is not None:
        _signal(child, "terminate")
        if _reaped(child, term_wait):
            return "terminated"
    _signal(child, "kill")
    if _reaped(child, kill_wait):
        return "killed"
    log.error("%s (PID %d) is still running after SIGKILL; abandoned (stuck in the kernel?)", name, child.pid)
    return "abandoned"


def end_processes(
    procs: Sequence[psutil.Process],
    name: str,
    *,
    term_wait: float | None = TERM_WAIT_S,
    kill_wait: float = KILL_WAIT_S,
) -> list[psutil.Process]:
    """`end_child` for processes that are not our children (a job's recorded ranks): SIGTERM (unless
    `term_wait` is None), wait, SIGKILL the rest, wait. Returns those still running, each logged as
    abandoned."""
    import psutil

    alive = list(procs)
    if term_wait is not None:
        _send(alive, "terminate")
        _, alive = psutil.wait_procs(alive, timeout=term_wait)
    _send(alive, "kill")
    _, stuck = psutil.wait_procs(alive, timeout=kill_wait)
    for proc in stuck:
        log.error(
            "%s (PID %d) is still running after SIGKILL; abandoned (stuck in the kernel?)", name, proc.pid
        )
    return list(stuck)


def _send(procs: Sequence[psutil.Process], how: str) -> None:
    import psutil

    for proc in procs:
        try:
            if how == "terminate":
                proc.terminate()
            else:
                proc.kill()
        except psutil.Error:  # it ended meanwhile, or is no longer ours to signal
            pass


def abandoned_what(name: str, pid: int) -> str:
    """What happened, for a banner."""
    return f"{name} (PID {pid}) did not exit even after SIGKILL and was left behind"


def abandoned_todo(pid: int) -> str:
    """What to do about it, for a banner."""
    return f"it is probably stuck in the driver: check `dmesg` and `ps -o stat,wchan -p {pid}`"


def abandoned_message(name: str, pid: int) -> str:
    """The banner text for an abandoned child: what happened and what to do."""
    return f"{abandoned_what(name, pid)} — {abandoned_todo(pid)}"


def _reaped(child: subprocess.Popen[bytes] | subprocess.Popen[str], limit: float) -> bool:
    if child.poll() is not None:
        return True
    if limit <= 0:
        return False
    try:
        child.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        return False
    return True


def _signal(child: subprocess.Popen[bytes] | subprocess.Popen[str], how: str) -> None:
    try:
        if how == "terminate":
            child.terminate()
        else:
            child.kill()
    except ProcessLookupError:  # it ended between the poll and the signal
        pass
