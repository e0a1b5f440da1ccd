"""Your own command's entry point ON a Ray cluster: `python -m gaudi_tui.core.jobs.worker.ray_command`.

`--run-id ID --storage DIR [--resume CKPT]`, the spec in `GAUDI_TUI_SPEC`, as the Ray job's
entrypoint on one node (Ray gives it that node's cards). It checks what only the node can tell
(the folder, the program on PATH, the launcher, the script), then starts the command's launcher
(`kinds/command.argv`, never a shell) as its child in its own session, in the working folder: a
copy of the shipped folder in the run folder `DIR/ID/work` (so relative output folders last across
attempts), or `ray_workdir`. The child gets the command's environment (the job's, with Ray's
HABANA_VISIBLE_MODULES, the wrapper's site folder on PYTHONPATH, `GAUDI_TUI_RUN=DIR/ID`) and this
process's stdout and stderr, which are the job's log: the panel mirrors it into stdout.log, where
the output readers chart it, and the Trainer callback prints its metrics there as prefixed lines.

Stop: this process polls the job's stop flag in Ray's KV store. Once the Trainer callback runs
(`wrapper.json` in `DIR/ID`) it writes the STOP file there (every rank stops at one step, one
checkpoint); otherwise SIGINT, SIGTERM after `kill_grace_s`, SIGKILL after another, to the child's
session, and a `STOPPED_PREFIX` line says so. Ray's own stop (the panel's kill) sends SIGTERM to
the whole process tree. The exit code is the child's (128 + N for signal N).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs.kinds import command
from gaudi_tui.core.jobs.kinds.command_cluster import WORK
from gaudi_tui.core.jobs.outcome import ERROR_PREFIX
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec, SpecError
from gaudi_tui.core.jobs.worker.logstream import LOG_METRICS_ENV, RANK_PREFIX, STOPPED_PREFIX, WRAPPER_MARKER

POLL_S = 0.5
KILL_WAIT_S = 2.0
"""After Ray's SIGTERM (the panel's kill), how long the command has before SIGKILL (Ray's own
SIGKILL follows 3 s after its SIGTERM)."""
DRIVER_ONLY = ("GAUDI_TUI_SPEC", "GAUDI_TUI_STOP_KEY")
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None)  # loaded before any fork: the child only calls into it


def say(text: str) -> None:
    print(f"[gaudi-tui] {text}", flush=True)


def folder(spec: JobSpec, run: RunFolder) -> Path:
    """Where the command runs: `ray_workdir`, or a copy of the shipped folder (this process's cwd,
    Ray's unpacked working_dir) in the run folder, refreshed every attempt."""
    if spec.ray_workdir:
        return Path(spec.ray_workdir).expanduser()
    work = run.path / WORK
    shutil.copytree(Path.cwd(), work, symlinks=True, dirs_exist_ok=True)
    return work


def child_env(run: RunFolder, spec: JobSpec) -> dict[str, str]:
    env = command.job_env(run, spec, os.environ)
    for name in DRIVER_ONLY:
        env.pop(name, None)
    env[LOG_METRICS_ENV] = "1"
    return env


def _child_setup() -> None:
    """In the child before exec: Ray blocks SIGINT in its processes (and masks are inherited), so
    the command gets Python's and the launchers' usual handling back; it dies with this process."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Driver:
    def __init__(
        self, run: RunFolder, spec: JobSpec, child: subprocess.Popen[bytes], killed: threading.Event
    ) -> None:
        self.run, self.spec, self.child = run, spec, child
        self.stop_asked = False
        self.killed = killed
        """Ray's SIGTERM to this process: the panel's kill (Ray's stop_job)."""
        self.stop_signal: signal.Signals | None = None
        self._next_signal_at = 0.0

    def signal_child(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.child.pid, sig)  # the command's session: launcher and ranks together
        except (ProcessLookupError, PermissionError):
            pass

    def watch(self, flag: Callable[[], bool] | None) -> int:
        """Until the child exits (not reaped yet, so its session can still be signalled): the stop
        flag, Ray's SIGTERM. Then whatever is left of its session is killed."""
        killed_at = 0.0
        while self._running():
            if self.killed.is_set() and not killed_at:
                killed_at = time.monotonic()
                self.signal_child(signal.SIGTERM)
            elif killed_at and time.monotonic() - killed_at > KILL_WAIT_S:
                self.signal_child(signal.SIGKILL)
            if not self.stop_asked and flag is not None and _read(flag):
                self.stop_asked = True
                say("stop requested")
            if self.stop_asked and not self.killed.is_set():
                self._stop_step()
            time.sleep(POLL_S)
        self.signal_child(signal.SIGKILL)  # ranks that outlived the launcher
        code = self.child.wait()
        return 128 - code if code < 0 else code

    def _running(self) -> bool:
        return os.waitid(os.P_PID, self.child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None

    def _stop_step(self) -> None:
        """The STOP file while the Trainer callback runs; else SIGINT now, SIGTERM and SIGKILL later."""
        if self.stop_signal is None and (self.run.path / WRAPPER_MARKER).is_file():
            if not self.run.stop_requested():
                self.run.request_stop()
                say("stop: the STOP file (the Trainer callback stops every rank at one step)")
            return
        now = time.monotonic()
        order = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
        if now < self._next_signal_at or self.stop_signal == order[-1]:
            return
        self.stop_signal = order[0] if self.stop_signal is None else order[order.index(self.stop_signal) + 1]
        self._next_signal_at = now + self.spec.kill_grace_s
        say(f"stop: {self.stop_signal.name} (no Trainer callback runs)")
        self.signal_child(self.stop_signal)


def _read(flag: Callable[[], bool]) -> bool:
    try:
        return flag()
    except Exception as exc:  # noqa: BLE001 - the GCS may blink; the next poll asks again
        say(f"cannot read the stop flag ({type(exc).__name__}: {exc})")
        return False


def stop_flag(key: str) -> Callable[[], bool] | None:
    """The job's stop flag (Ray's KV store), and this node in a rank line; None when Ray cannot be
    joined (the command still runs, and Ray's own stop still ends it)."""
    try:
        import logging

        import ray

        from gaudi_tui.core.jobs.worker.ray_train import kv_flag

        ray.init(address="auto", logging_level=logging.ERROR, log_to_driver=False)
        here = {"rank": 0, "node_id": ray.get_runtime_context().get_node_id()}
        here["node_ip"] = ray.util.get_node_ip_address()
        print(RANK_PREFIX + json.dumps(here), flush=True)
        return kv_flag(key)
    except Exception as exc:  # noqa: BLE001 - said in the log; the command runs regardless
        say(f"no graceful stop for this attempt: cannot join the Ray cluster ({type(exc).__name__}: {exc})")
        return None


def run_command(run_id: str, storage: Path, resume: str | None) -> int:
    spec = spec_mod.from_toml(os.environ.get("GAUDI_TUI_SPEC", ""))
    run = RunFolder(storage.expanduser() / run_id)
    run.path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not run.spec_path.exists():
        run.spec_path.write_text(spec_mod.to_toml(spec), encoding="utf-8")
    for stale in (run.stop_path, run.path / WRAPPER_MARKER):  # an earlier attempt's
        stale.unlink(missing_ok=True)
    cwd = folder(spec, run)
    spec = replace(spec, workdir=str(cwd))
    env = child_env(run, spec)
    problems = command.check(spec, env)  # here, on the node, with the node's PATH and Python
    if problems:
        for problem in problems:
            print(
                f"{ERROR_PREFIX}{problem} (checked on the cluster's node {socket.gethostname()})", flush=True
            )
        return 2
    argv = command.argv(spec, Path(resume) if resume else None, python=sys.executable)
    say(f"running in {cwd}: {' '.join(argv)}")
    killed = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: killed.set())  # the child gets the default back
    try:
        child = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True, preexec_fn=_child_setup
        )
    except OSError as exc:
        print(
            f"{ERROR_PREFIX}cannot start {argv[0]} on {socket.gethostname()}: {exc.strerror or exc}",
            flush=True,
        )
        return 127
    driver = Driver(run, spec, child, killed)
    code = driver.watch(stop_flag(os.environ.get("GAUDI_TUI_STOP_KEY", run_id)))
    if driver.stop_signal is not None and not killed.is_set():
        print(STOPPED_PREFIX + json.dumps({"signal": driver.stop_signal.name, "exit_code": code}), flush=True)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaudi_tui.core.jobs.worker.ray_command")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--storage", type=Path, required=True)
    parser.add_argument(
        "--resume", default=None, help="the checkpoint to continue from (passed with resume_flag)"
    )
    args = parser.parse_args(argv)
    try:
        return run_command(args.run_id, args.storage, args.resume)
    except SpecError as exc:
        print(f"{ERROR_PREFIX}{exc}", flush=True)
        return 2
    except Exception as exc:  # noqa: BLE001 - one line for status.json, the traceback above it
        traceback.print_exc()
        print(f"{ERROR_PREFIX}{type(exc).__name__}: {exc}", flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
