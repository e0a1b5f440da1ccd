"""The detached supervisor: `python -m gaudi_tui.core.jobs.supervisor RUN [--resume CKPT] [--attach]`.

It runs in its own session (no controlling terminal, so SSH hang-ups never reach it), writes
status.json, and hands the attempt to the spec's target (`targets/`): local processes on this host
or a Ray cluster. SIGTERM to the supervisor means "kill the job". `--attach` re-attaches to an
attempt that is still running elsewhere (a Ray job whose supervisor died). It sends the job's
alerts (`core/alerts/jobs.py`): the attempt's end, seen in every status it saves, a stall, and
the Gaudi insight's (still compiling after warm-up, HBM near full). It keeps the Training charts'
series in the run folder as the job runs (`series_keeper.py`).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from gaudi_tui.core.alerts.jobs import JobAlerts
from gaudi_tui.core.jobs import targets
from gaudi_tui.core.jobs.outcome import ERROR_PREFIX, error_from_log
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.series_keeper import SeriesKeeper
from gaudi_tui.core.jobs.spec import SpecError
from gaudi_tui.core.jobs.status import JobStatus, ProcRef

__all__ = ["ERROR_PREFIX", "Supervisor", "error_from_log", "main", "start"]


def start(
    run: RunFolder, resume: Path | None = None, env: Mapping[str, str] | None = None, attach: bool = False
) -> int:
    """Start the supervisor detached (own session) and return its PID; the caller may exit at once."""
    argv = [sys.executable, "-m", "gaudi_tui.core.jobs.supervisor", str(run.path)]
    if resume is not None:
        argv += ["--resume", str(resume)]
    if attach:
        argv.append("--attach")
    with open(run.path / "supervisor.log", "ab") as log:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=run.path,
            start_new_session=True,
            close_fds=True,
        )
    # Reap it when it ends if this process is still alive then (the TUI); no zombie is left behind.
    threading.Thread(target=child.wait, name=f"reap-{child.pid}", daemon=True).start()
    return child.pid


def requeue(run: RunFolder, status: JobStatus, resume: Path, env: Mapping[str, str] | None = None) -> int:
    """A new attempt of a stopped job from the checkpoint `resume`: STOP cleared, status queued with
    the next attempt number, a fresh supervisor started. Returns its PID."""
    run.stop_path.unlink(missing_ok=True)
    run.write_status(
        status.with_(
            state="queued",
            attempt=status.attempt + 1,
            stop_requested=False,
            kill_requested=False,
            supervisor=None,
            queued=time.time(),
        )
    )
    return start(run, resume=resume, env=env)


class Supervisor:
    def __init__(self, run: RunFolder, resume: Path | None, attach: bool = False) -> None:
        self.run = run
        self.resume = resume
        self.attach = attach
        self.status = run.status() or JobStatus(created=time.time())
        self.spec = run.spec()
        self.kill_requested = threading.Event()
        self.alerts = JobAlerts(run, self.spec)

    def save(self, **changes: object) -> None:
        self.status = self.status.with_(**changes)
        try:
            self.run.write_status(self.status)
        except OSError as exc:  # the folder is gone or the disk is full: keep supervising regardless
            print(f"cannot write {self.run.status_path}: {exc}", file=sys.stderr, flush=True)
        self.alerts.on_save(self.status)  # the end of the attempt: its alert, once

    def main(self) -> int:
        os.umask(0o077)  # everything the job writes stays private, like the run folder
        signal.signal(signal.SIGTERM, lambda *_: self.kill_requested.set())
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        if self.attach:
            self.save(supervisor=ProcRef.of(os.getpid()))
        else:
            previous = self.status
            now = time.time()
            self.save(
                state="running",
                started=now,
                ended=None,
                earlier_seconds=previous.elapsed(now) if previous.started is not None else 0.0,
                resumed_from=str(self.resume) if self.resume else None,
                supervisor=ProcRef.of(os.getpid()),
                launcher=None,
                workers=(),
                stop_requested=self.run.stop_requested(),
                kill_requested=False,
                exit_code=None,
                error=None,
            )
        self.alerts.watch(lambda: self.status)
        attempt = targets.Attempt(
            run=self.run,
            spec=self.spec,
            resume=self.resume,
            attach=self.attach,
            kill_requested=self.kill_requested,
            save=self.save,
            status=lambda: self.status,
        )
        keeper = SeriesKeeper(self.run).start()
        try:
            return targets.for_spec(self.spec).supervise(attempt)
        finally:
            keeper.finish()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaudi_tui.core.jobs.supervisor")
    parser.add_argument("run", type=Path)
    parser.add_argument("--resume", type=Path, default=None)
    parser.add_argument("--attach", action="store_true", help="re-attach to an attempt still running")
    args = parser.parse_args(argv)
    run = RunFolder(args.run)
    try:
        supervisor = Supervisor(run, args.resume, args.attach)
    except SpecError as exc:  # spec.toml edited into something unreadable after launch
        status = run.status() or JobStatus(created=time.time())
        run.write_status(status.with_(state="failed", ended=time.time(), error=str(exc)))
        return 1
    return supervisor.main()


if __name__ == "__main__":
    sys.exit(main())
