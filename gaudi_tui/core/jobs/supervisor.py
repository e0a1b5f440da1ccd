"""The detached supervisor: `python -m gaudi_tui.core.jobs.supervisor RUN [--resume CKPT]`.

It runs in its own session (no controlling terminal, so SSH hang-ups never reach it), parents the
launcher, records every process of the job tree with its start time, notices the STOP file, and
writes the outcome. SIGTERM to the supervisor means "kill the job": SIGTERM to the launcher, then
after `kill_grace_s` SIGKILL to every recorded process still alive (torchrun leaves its workers
running if it is SIGKILLed itself, so they are killed one by one).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import psutil

from gaudi_tui.core.jobs import launch
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import SpecError
from gaudi_tui.core.jobs.status import JobStatus, ProcRef

POLL_S = 0.2
ORPHAN_GRACE_S = 5.0
ERROR_PREFIX = "gaudi-tui job error: "
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Interrupt)\b:?.*")


def start(run: RunFolder, resume: Path | None = None, env: Mapping[str, str] | None = None) -> int:
    """Start the supervisor detached (own session) and return its PID; the caller may exit at once."""
    argv = [sys.executable, "-m", "gaudi_tui.core.jobs.supervisor", str(run.path)]
    if resume is not None:
        argv += ["--resume", str(resume)]
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


class Supervisor:
    def __init__(self, run: RunFolder, resume: Path | None) -> None:
        self.run = run
        self.resume = resume
        self.status = run.status() or JobStatus(created=time.time())
        self.spec = run.spec()
        self.kill_requested = threading.Event()
        self.known: dict[int, ProcRef] = {}

    def save(self, **changes: object) -> None:
        self.status = self.status.with_(**changes)
        try:
            self.run.write_status(self.status)
        except OSError as exc:  # the folder is gone or the disk is full: keep supervising regardless
            print(f"cannot write {self.run.status_path}: {exc}", file=sys.stderr, flush=True)

    def main(self) -> int:
        os.umask(0o077)  # everything the job writes stays private, like the run folder
        signal.signal(signal.SIGTERM, lambda *_: self.kill_requested.set())
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        argv = launch.command(self.run, self.spec, self.resume)
        env = launch.job_env(self.run, self.spec, os.environ)
        previous = self.status
        now = time.time()
        self.save(
            state="running",
            started=now,
            ended=None,
            earlier_seconds=previous.elapsed(now) if previous.started is not None else 0.0,
            resumed_from=str(self.resume) if self.resume else None,
            command=tuple(argv),
            supervisor=ProcRef.of(os.getpid()),
            launcher=None,
            workers=(),
            stop_requested=self.run.stop_requested(),
            kill_requested=False,
            exit_code=None,
            error=None,
        )
        with open(self.run.log_path, "ab") as log:
            log.write(f"[gaudi-tui] attempt {self.status.attempt}: {' '.join(argv)}\n".encode())
            log.flush()
            try:
                child = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=self.run.path,
                    start_new_session=True,
                )
            except OSError as exc:
                self.save(state="failed", ended=time.time(), error=f"cannot start the launcher: {exc}")
                return 1
        self.save(launcher=ProcRef.of(child.pid))
        code = self.watch(child)
        self.finish(code)
        return 0

    def watch(self, child: subprocess.Popen[bytes]) -> int:
        """Poll until the launcher exits, recording workers and acting on STOP and kill."""
        kill_deadline: float | None = None
        while True:
            code = child.poll()
            if code is not None:
                return code
            self.record_tree(child.pid)
            if not self.run.path.is_dir():
                self.kill_requested.set()  # the run folder was deleted: nothing may run on without it
            if self.run.stop_requested() and not self.status.stop_requested:
                self.save(state="stopping", stop_requested=True)
            if self.kill_requested.is_set() and kill_deadline is None:
                self.save(state="stopping", kill_requested=True)
                _signal_group(child.pid, signal.SIGTERM)
                kill_deadline = time.monotonic() + self.spec.kill_grace_s
            if kill_deadline is not None and time.monotonic() >= kill_deadline:
                self.kill_all(signal.SIGKILL)
                child.kill()
            time.sleep(POLL_S)

    def record_tree(self, pid: int) -> None:
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
            self.save(workers=tuple(self.known.values()))

    def kill_all(self, sig: signal.Signals) -> list[psutil.Process]:
        """Send `sig` to every recorded process that is still the same process; return those."""
        alive = [p for p in (ref.process() for ref in self.known.values()) if p is not None]
        for proc in alive:
            try:
                proc.send_signal(sig)
            except psutil.Error:
                pass
        return alive

    def finish(self, code: int) -> None:
        """Make sure no process of the job outlives it, then write the outcome."""
        alive = self.kill_all(signal.SIGTERM)
        if alive:
            _, still = psutil.wait_procs(alive, timeout=ORPHAN_GRACE_S)
            for proc in still:
                try:
                    proc.kill()
                except psutil.Error:
                    pass
        end = _last_end_event(self.run.metrics_path)
        if self.kill_requested.is_set() or self.status.kill_requested:
            state, error = "cancelled", f"killed (exit {code})"
        elif code == 0 and end is not None and end.get("stopped"):
            state, error = "cancelled", None
        elif code == 0:
            state, error = "succeeded", None
        else:
            state, error = "failed", error_from_log(self.run.log_path) or f"exit code {code}"
        self.save(state=state, ended=time.time(), exit_code=code, error=error)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _last_end_event(path: Path) -> dict | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "begin":
            return None
        if event.get("event") == "end":
            return event
    return None


def error_from_log(path: Path, tail_bytes: int = 65536) -> str | None:
    """The job's own error line if it printed one, else the last exception line of the log."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - tail_bytes))
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if ERROR_PREFIX in line:
            return line.split(ERROR_PREFIX, 1)[1].strip()
    for line in reversed(lines):
        text = line.strip()
        if _EXCEPTION_LINE.match(text) and ":" in text:
            return text[:500]
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaudi_tui.core.jobs.supervisor")
    parser.add_argument("run", type=Path)
    parser.add_argument("--resume", type=Path, default=None)
    args = parser.parse_args(argv)
    run = RunFolder(args.run)
    try:
        supervisor = Supervisor(run, args.resume)
    except SpecError as exc:  # spec.toml edited into something unreadable after launch
        status = run.status() or JobStatus(created=time.time())
        run.write_status(status.with_(state="failed", ended=time.time(), error=str(exc)))
        return 1
    return supervisor.main()


if __name__ == "__main__":
    sys.exit(main())
