"""Run a short-lived Python child that prints facts as its last JSON line, with a limit and a cancel.

Used wherever something must not happen in the panel's own process (importing habana_frameworks
acquires a card; is_torch_hpu_available() patches torch): the accelerator probe and the doctor's
isolated checks. Output goes to temporary files, so a chatty child never blocks on a full pipe.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from gaudi_tui.core import processes

POLL_S = 0.05


class ProbeTimedOut(Exception):
    def __init__(self, seconds: float) -> None:
        super().__init__(f"timed out after {seconds:g} s")
        self.seconds = seconds


class ProbeCancelled(Exception):
    pass


class ProbeFailed(Exception):
    """The child ended without a result; the message carries its last stderr line."""


def run_json_child(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
    on_start: Callable[[int], None] | None = None,
    nice: int = 0,
) -> dict[str, object]:
    """The last JSON object line the child prints; the child is killed at the limit or on cancel.
    `nice` lowers the child's priority by that much (a background probe yields the cores to the user)."""
    cancel = cancel or threading.Event()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=dict(env) if env is not None else None,
            text=True,
        )
        if nice:
            _lower_priority(child.pid, nice)
        if on_start is not None:
            on_start(child.pid)
        deadline = time.monotonic() + timeout
        while child.poll() is None:
            if cancel.is_set() or time.monotonic() >= deadline:
                if processes.end_child(child, argv[0], term_wait=None) == "abandoned":
                    raise ProbeFailed(processes.abandoned_message(" ".join(argv), child.pid))
                if cancel.is_set():
                    raise ProbeCancelled(" ".join(argv))
                raise ProbeTimedOut(timeout)
            cancel.wait(POLL_S)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                break
    last = (stderr.strip().splitlines() or ["no output"])[-1]
    raise ProbeFailed(f"exit {child.returncode}: {last}")


def _lower_priority(pid: int, by: int) -> None:
    """Raise the child's niceness by `by` (capped at 19); a child already gone is no matter."""
    try:
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, pid, min(19, ours + by))
    except OSError:
        pass
