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
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from gaudi_tui.core import processes
from gaudi_tui.core.jobs import kinds, launch, runfolder
from gaudi_tui.core.jobs.outcome import error_from_log, last_end_event
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus, ProcRef
from gaudi_tui.core.jobs.targets import Attempt, Host, Presence
from gaudi_tui.core.jobs.targets.watch_checks import WatchChecks
from gaudi_tui.core.jobs.validate import Problem, hardware

POLL_S = 0.2
TREE_MAX_S = 1.0
"""The job's process tree is read every poll at first and after every change, then less often while
it stays the same, doubling up to TREE_MAX_S (and every poll while killing): a read scans every
process on the host (about 1 ms of CPU per 100 processes), which at every poll cost the training
up to 1 % of a core (bench/train.py)."""
ORPHAN_GRACE_S = 5.0
KILL_WAIT_S = 5.0
"""After SIGKILL, how long `kill` waits for the job's processes to go."""
STUCK_S = 10.0
"""How long the supervisor sends SIGKILL to a launcher that does not exit before it gives up on it."""
ENDING_GRACE_S = 10.0
"""How long after a job ended its processes may still be exiting before resume calls them stray."""


class LocalTarget:
    name = "local"
    runs_here = True
    starts_ranks = False
    remote_files = False

    def check(self, spec: JobSpec, host: Host) -> tuple[JobSpec, list[Problem]]:
        prepared = launch.prepare(spec, host.accel, host.selected_cards, host.env_fixes)
        job_env = dict(os.environ if host.env is None else host.env)
        job_env.update(prepared.env)
        return prepared, hardware(prepared, host.accel, job_env)

    def label(self, spec: JobSpec) -> str:
        return spec.device

    def summary(self, spec: JobSpec) -> str:
        return f"{spec.device} ({spec.processes} process(es), {kinds.for_spec(spec).launcher_words(spec)})"

    def supervise(self, attempt: Attempt) -> int:
        return kinds.for_spec(attempt.spec).supervise_here(attempt)  # the kind's processes, here

    def request_stop(self, run: RunFolder) -> None:
        run.request_stop()  # read by the training processes themselves

    def kill(self, run: RunFolder, status: JobStatus, cancel: threading.Event | None) -> str:
        """SIGTERM to the launcher's group, SIGKILL to every recorded process after the spec's grace
        (`cancel` cuts the wait short)."""
        grace = run.spec().kill_grace_s
        if status.launcher is not None and (proc := status.launcher.process()) is not None:
            _signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        refs = [r for r in (status.launcher, *status.workers) if r is not None]
        waiter = cancel or threading.Event()
        while time.monotonic() < deadline and any(r.alive() for r in refs):
            if waiter.wait(0.2):
                break
        still = [p for p in (ref.process() for ref in refs) if p is not None]
        stuck = processes.end_processes(still, f"{run.id} process", term_wait=None, kill_wait=KILL_WAIT_S)
        error = "killed (no supervisor)"
        if stuck:
            pids = ", ".join(str(p.pid) for p in stuck)
            error += f"; PID {pids} survived SIGKILL and was left behind (check dmesg)"
        return error

    def presence(self, run: RunFolder, status: JobStatus) -> Presence:
        """Running while a recorded process (supervisor, launcher, workers) is still the same
        process; right after a job ended they get ENDING_GRACE_S to exit."""
        until = (status.ended or 0.0) + ENDING_GRACE_S
        refs = [
            r for r in (status.supervisor, status.launcher, *status.workers) if r is not None and r.alive()
        ]
        while refs and time.time() < until:
            time.sleep(0.1)
            refs = [r for r in refs if r.alive()]
        if refs:
            pids = ", ".join(str(r.pid) for r in refs)
            return Presence("running", f"its processes still run (PID {pids})")
        return Presence("ended", "no process of it runs on this host")

    def newest_checkpoint(self, run: RunFolder) -> Path | None:
        return run.newest_complete_checkpoint()

    def where(self, run: RunFolder) -> str:
        return ""

    def details(self, run: RunFolder) -> str:
        return ""


class Supervision:
    """One attempt in the supervisor: the launcher as its child, its process tree recorded."""

    def __init__(self) -> None:
        self.known: dict[int, ProcRef] = {}
        self.checks = WatchChecks("the job is watched on")
        self.metrics_base = 0
        """Where this attempt's events begin in metrics.jsonl (its size when the launcher started)."""

    def supervise(self, attempt: Attempt) -> int:
        run, spec = attempt.run, attempt.spec
        argv = launch.command(run, spec, attempt.resume)
        started = self.start_logged(
            attempt, argv, launch.job_env(run, spec, os.environ), run.path, "the launcher"
        )
        if started is None:
            return 1
        child, _ = started
        code = self.watch(attempt, child)
        if code is None:
            self.finish_stuck(attempt, child.pid)
            return 1
        self.finish(attempt, code)
        return 0

    def start_logged(
        self,
        attempt: Attempt,
        argv: list[str],
        env: dict[str, str],
        cwd: Path | None,
        what: str,
        preexec: Callable[[], None] | None = None,
    ) -> tuple[subprocess.Popen[bytes], int] | None:
        """The attempt's line in stdout.log, then `argv` as a child in its own session writing to
        it (`preexec` runs in the child before exec: no thread runs yet in the supervisor). Returns
        the child and where its output begins in the log; None, with the attempt saved failed, when
        it cannot start."""
        attempt.save(command=tuple(argv))
        self.metrics_base = runfolder.file_size(attempt.run.metrics_path)
        with open(attempt.run.log_path, "ab") as log:
            log.write(f"[gaudi-tui] attempt {attempt.status().attempt}: {' '.join(argv)}\n".encode())
            log.flush()
            begins = log.tell()
            try:
                child = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    env=env, cwd=cwd, start_new_session=True, preexec_fn=preexec,
                )  # fmt: skip
            except OSError as exc:
                attempt.save(
                    state="failed", ended=time.time(), error=f"cannot start {what}: {exc.strerror or exc}"
                )
                return None
        attempt.save(launcher=ProcRef.of(child.pid))
        return child, begins

    def watch(self, attempt: Attempt, child: subprocess.Popen[bytes]) -> int | None:
        """Poll until the launcher exits, recording workers and acting on STOP and kill; None when
        it outlives SIGKILL by STUCK_S (stuck in the kernel)."""
        kill_deadline: float | None = None
        run = attempt.run
        tree_every, next_tree = POLL_S, 0.0
        while True:
            code = child.poll()
            if code is not None:
                return code
            if time.monotonic() >= next_tree or attempt.kill_requested.is_set():  # every poll once killing
                grew = self.checks.run(
                    "recording the process tree", lambda: self.record_tree(attempt, child.pid)
                )
                tree_every = POLL_S if grew else min(tree_every * 2, TREE_MAX_S)
                next_tree = time.monotonic() + tree_every
            if not run.path.is_dir():
                attempt.kill_requested.set()  # the run folder was deleted: nothing may run on without it
            if run.stop_requested() and not attempt.status().stop_requested:
                attempt.save(state="stopping", stop_requested=True)
            self.checks.run("the kind's check", lambda: self.on_poll(attempt, child))
            if attempt.kill_requested.is_set() and kill_deadline is None:
                attempt.save(state="stopping", kill_requested=True)
                self.signal_launcher(child, signal.SIGTERM)
                kill_deadline = time.monotonic() + attempt.spec.kill_grace_s
            if kill_deadline is not None and time.monotonic() >= kill_deadline:
                self.kill_all(signal.SIGKILL)
                child.kill()
                if time.monotonic() >= kill_deadline + STUCK_S:
                    return None
            time.sleep(POLL_S)

    def on_poll(self, attempt: Attempt, child: subprocess.Popen[bytes]) -> None:
        """Each poll while the launcher runs: a kind's own part of the watch (the command's stop by
        signals); nothing for the built-in job, whose ranks read STOP themselves."""

    def signal_launcher(self, child: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        """The kill's SIGTERM: to the launcher's session."""
        _signal_group(child.pid, sig)

    def finish_stuck(self, attempt: Attempt, launcher: int) -> None:
        """The launcher survived SIGKILL: it can never run job code again (a pending SIGKILL ends it
        on its way back from the kernel), so the attempt is over; the process is left behind, named,
        and resume refuses while it exists."""
        stuck = sorted({launcher, *(p.pid for p in self.kill_all(signal.SIGKILL))})
        error = (
            f"killed, but PID {', '.join(map(str, stuck))} survived SIGKILL for {STUCK_S:g} s (stuck in the "
            "kernel or the driver: check dmesg); it was left behind"
        )
        attempt.save(state="cancelled", ended=time.time(), error=error)

    def record_tree(self, attempt: Attempt, pid: int) -> bool:
        """Record the launcher's new descendants; True when there were any."""
        try:
            children = psutil.Process(pid).children(recursive=True)
        except psutil.Error:
            return False
        new = False
        for proc in children:
            if proc.pid not in self.known:
                ref = ProcRef.of(proc.pid)
                if ref is not None:
                    self.known[proc.pid] = ref
                    new = True
        if new:
            attempt.save(workers=tuple(self.known.values()))
        return new

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
        end = last_end_event(run.metrics_path, self.metrics_base)
        if attempt.kill_requested.is_set() or attempt.status().kill_requested:
            state, error = "cancelled", f"killed (exit {code})"
        elif code == 0 and end is not None and end.get("stopped"):
            state, error = "stopped", None
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


TARGET = LocalTarget()
