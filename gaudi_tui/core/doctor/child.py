"""Run one probe (`probe.py`) in a throwaway child process, with the context's limit and cancel."""

from __future__ import annotations

import json
import subprocess
import tempfile
import time

from gaudi_tui.core.doctor.context import CheckContext

POLL_S = 0.05


class ProbeTimedOut(Exception):
    def __init__(self, seconds: float) -> None:
        super().__init__(f"timed out after {seconds:g} s")
        self.seconds = seconds


class ProbeCancelled(Exception):
    pass


class ProbeFailed(Exception):
    """The child ended without a result; the message carries its last stderr line."""


def run_probe(ctx: CheckContext, name: str) -> dict[str, object]:
    """Facts the child `python -m gaudi_tui.core.doctor.probe NAME` prints as its last JSON line.

    Output goes to temporary files, so a chatty child never blocks on a full pipe; the child is
    killed when the limit passes or the context is cancelled.
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(
            [ctx.python, "-m", "gaudi_tui.core.doctor.probe", name],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=dict(ctx.env),
            text=True,
        )
        ctx.track_child(child.pid)
        deadline = time.monotonic() + ctx.timeout
        while child.poll() is None:
            if ctx.cancel.is_set() or time.monotonic() >= deadline:
                child.kill()
                child.wait()
                if ctx.cancel.is_set():
                    raise ProbeCancelled(name)
                raise ProbeTimedOut(ctx.timeout)
            ctx.cancel.wait(POLL_S)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    last = (stderr.strip().splitlines() or ["no output"])[-1]
    raise ProbeFailed(f"the probe child exited with code {child.returncode}: {last}")
