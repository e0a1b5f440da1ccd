"""A command's attempt on this host, in the supervisor: the local target's process handling (the
command as its child in its own session, every process recorded, kill with a grace) plus the
command's own parts: its folder and environment, the output follower, the stop by signals when no
Trainer callback runs, and following a run that was started by hand.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from gaudi_tui.core.jobs.kinds import command
from gaudi_tui.core.jobs.kinds.command_follow import OutputFollower
from gaudi_tui.core.jobs.outcome import error_from_log
from gaudi_tui.core.jobs.runfolder import checkpoint_step
from gaudi_tui.core.jobs.status import ProcRef
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.targets.local import POLL_S, Supervision

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
"""A stop without the callback: each one `kill_grace_s` after the one before."""


def _default_signals() -> None:
    """In the child before exec: the supervisor ignores SIGINT and SIGHUP, and ignored signals are
    inherited; the command gets Python's and the launchers' usual handling back (SIGINT raises
    KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


class CommandSupervision(Supervision):
    stop_reason = "no Trainer callback runs"
    """Why a stop is by signals, in the log's stop line."""

    def __init__(self) -> None:
        super().__init__()
        self.stop_signal: signal.Signals | None = None
        self._next_signal_at = 0.0

    def supervise(self, attempt: Attempt) -> int:
        run, spec = attempt.run, attempt.spec
        (run.path / command.WRAPPER_MARKER).unlink(missing_ok=True)  # set again by this attempt's Trainer
        if command.is_attach(spec):
            return self.follow_attached(attempt)
        argv = command.argv(spec, attempt.resume)
        env = command.job_env(run, spec, os.environ)
        started = self.start_logged(
            attempt, argv, env, Path(spec.workdir) if spec.workdir else None, argv[0], _default_signals
        )
        if started is None:
            return 1
        child, begins = started
        follower = OutputFollower(
            run,
            spec,
            run.log_path,
            offset=begins,
            begin_step=checkpoint_step(attempt.resume) if attempt.resume else 0,
            resumed_from=str(attempt.resume) if attempt.resume else None,
        )
        follower.start()
        code = self.watch(attempt, child)
        follower.close(stopped=self.stop_signal is not None)
        if code is None:
            self.finish_stuck(attempt, child.pid)
            return 1
        self.finish(attempt, code)
        return 0

    def on_poll(self, attempt: Attempt, child: subprocess.Popen[bytes]) -> None:
        """The stop by signals while no Trainer callback runs (with one, the ranks read STOP)."""
        if attempt.run.stop_requested() and not command.wrapper_active(attempt.run):
            self._signal_step(attempt, lambda sig: self.signal_launcher(child, sig))

    def _signal_step(self, attempt: Attempt, send) -> None:  # noqa: ANN001 - Callable[[Signals], None]
        """SIGINT now, SIGTERM and SIGKILL later, each `kill_grace_s` apart."""
        now = time.monotonic()
        if now < self._next_signal_at:
            return
        index = 0 if self.stop_signal is None else SIGNALS.index(self.stop_signal) + 1
        if index >= len(SIGNALS):
            return
        self.stop_signal = SIGNALS[index]
        self._next_signal_at = now + attempt.spec.kill_grace_s
        with open(attempt.run.log_path, "ab") as log:
            log.write(f"[gaudi-tui] stop: {self.stop_signal.name} ({self.stop_reason})\n".encode())
        send(self.stop_signal)

    def signal_launcher(self, child: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        try:
            os.killpg(child.pid, sig)  # the command's session: launcher and ranks together
        except (ProcessLookupError, PermissionError):
            pass
        self.kill_all(sig)  # and any that left the group

    def finish(self, attempt: Attempt, code: int) -> None:
        if self.stop_signal is not None and not attempt.kill_requested.is_set():
            self.kill_all(signal.SIGKILL)
            attempt.save(
                state="stopped",
                ended=time.time(),
                exit_code=code,
                error=f"stopped by {self.stop_signal.name}",
            )
            return
        super().finish(attempt, code)

    def follow_attached(self, attempt: Attempt) -> int:
        """A run started by hand: follow its log; watch and signal its PID only while it is the
        user's own process with the start time recorded when attaching."""
        run, spec = attempt.run, attempt.spec
        ref = ProcRef(spec.pid, spec.pid_started) if spec.pid else None
        attempt.save(command=("(started by hand)", spec.log_file), workers=(ref,) if ref else ())
        follower = OutputFollower(run, spec, Path(spec.log_file), offset=0)
        follower.start()
        ended_by = ""
        while True:
            if ref is not None and not ref.alive():
                ended_by = "" if self.stop_signal is None else f"stopped by {self.stop_signal.name}"
                break
            stop = run.stop_requested() or attempt.kill_requested.is_set()
            if stop and ref is None:
                ended_by = "stopped following its log (no PID was given)"
                break
            if stop and ref is not None:
                refusal = command.own_process_problem(ref.pid, ref.started)
                if refusal is not None:
                    ended_by = f"stopped following: {refusal}"
                    break
                self._signal_step(attempt, lambda sig: os.kill(ref.pid, sig))
            time.sleep(POLL_S)
        follower.close(stopped=self.stop_signal is not None)
        error = ended_by or error_from_log(Path(spec.log_file))
        state = "stopped" if ended_by else ("failed" if error else "succeeded")
        attempt.save(state=state, ended=time.time(), error=error or None)
        return 0
