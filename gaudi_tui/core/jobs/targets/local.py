"""Local target: the launcher (`accelerate launch`, `torchrun` or one process) on this host.

The supervisor parents the launcher, records every process of the job tree with its start time,
and acts on kill: SIGTERM to the launcher, then after `kill_grace_s` SIGKILL to every recorded
process still alive (torchrun leaves its workers running if it is SIGKILLed itself, so they are
killed one by one). The STOP file is read by the training processes themselves.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil

from gaudi_tui.core import processes
from gaudi_tui.core.jobs import launch
from gaudi_tui.core.jobs.outcome import error_from_log, last_end_event
from gaudi_tui.core.jobs.status import ProcRef
from gaudi_tui.core.jobs.targets import Attempt

POLL_S = 0.2
ORPHAN_GRACE_S = 5.0


class LocalTarget:
    def __init__(self) -> None:
        self.known: dict[int, ProcRef] = {}

    def supervise(self, attempt: Attempt) -> int:
        run, spec = attempt.run, attempt.spec
        argv = launch.command(run, spec, attempt.resume)
        env = launch.job_env(run, spec, os.environ)
        attempt.save(command=tuple(argv))
        with open(run.log_path, "ab") as log:
            log.write(f"[gaudi-tui] attempt {attempt.status().attempt}: {' '.join(argv)}\n".encode())
            log.flush()
            try:
                child = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=run.path,
                    start_new_session=True,
                )
            except OSError as exc:
                attempt.save(state="failed", ended=time.time(), error=f"cannot start the launcher: {exc}")
                return 1
        attempt.save(launcher=ProcRef.of(child.pid))
        code = self.watch(attempt, child)
        self.finish(attempt, code)
        return 0

    def watch(self, attempt: Attempt, child: subprocess.Popen[bytes]) -> int:
        """Poll until the launcher exits, recording workers and acting on STOP and kill."""
        kill_deadline: float | None = None
        run = attempt.run
        while True:
            code = child.poll()
            if code is not None:
                return code
            self.record_tree(attempt, child.pid)
            if not run.path.is_dir():
                attempt.kill_requested.set()  # the run folder was deleted: nothing may run on without it
            if run.stop_requested() and not attempt.status().stop_requested:
                attempt.save(state="stopping", stop_requested=True)
            if attempt.kill_requested.is_set() and kill_deadline is None:
                attempt.save(state="stopping", kill_requested=True)
                _signal_group(child.pid, signal.SIGTERM)
                kill_deadline = time.monotonic() + attempt.spec.kill_grace_s
            if kill_deadline is not None and time.monotonic() >= kill_deadline:
                self.kill_all(signal.SIGKILL)
                child.kill()
            time.sleep(POLL_S)

    def record_tree(self, attempt: Attempt, pid: int) -> None:
        try:
            children = psutil.Process(pid).children(recursive=True)
        except psutil.Error:
            return
        new = False
        for proc in children:
            if proc.pid not in self.known:
                ref = ProcRef.of(proc.pid)
                if ref is not None:
                    self.known[proc.pid] = ref
                    new = True
        if new:
            attempt.save(workers=tuple(self.known.values()))

    def known_alive(self) -> list[psutil.Process]:
        """Every recorded process that is still the same process."""
        return [p for p in (ref.process() for ref in self.known.values()) if p is not None]

    def kill_all(self, sig: signal.Signals) -> list[psutil.Process]:
        """Send `sig` to every recorded process that is still the same process; return those."""
        alive = self.known_alive()
        for proc in alive:
            try:
                proc.send_signal(sig)
            except psutil.Error:
                pass
        return alive

    def finish(self, attempt: Attempt, code: int) -> None:
        """Make sure no process of the job outlives it, then write the outcome."""
        # bounded: one stuck in the kernel stays behind, logged
        processes.end_processes(
            self.known_alive(), "job process", term_wait=ORPHAN_GRACE_S, kill_wait=ORPHAN_GRACE_S
        )
        run = attempt.run
        end = last_end_event(run.metrics_path)
        if attempt.kill_requested.is_set() or attempt.status().kill_requested:
            state, error = "cancelled", f"killed (exit {code})"
        elif code == 0 and end is not None and end.get("stopped"):
            state, error = "cancelled", None
        elif code == 0:
            state, error = "succeeded", None
        else:
            state, error = "failed", error_from_log(run.log_path) or f"exit code {code}"
        attempt.save(state=state, ended=time.time(), exit_code=code, error=error)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
