"""What the panel and `gaudi-tui train`/`jobs` do to jobs: submit, stop, kill, resume, re-attach.

Every decision is made here once, for every target (`targets/`): this module names none. The
rules: never two copies of one job (resume refuses while the target cannot prove that no attempt
runs: `presence` is not `ended`; unknown is never ended), one command at a time on a run folder
(a lock), and a status written by a command is re-read under that lock first.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.jobs import kinds, runfolder, supervisor, targets
from gaudi_tui.core.jobs.liveness import current
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec, SpecError
from gaudi_tui.core.jobs.status import ACTIVE, JobStatus, ProcRef
from gaudi_tui.core.jobs.targets import Host, Target, TargetError
from gaudi_tui.core.jobs.validate import InvalidSpec, Problem

log = logging.getLogger(__name__)

RESUME_LOCK = ".resume.lock"


class JobControlError(RuntimeError):
    """The action does not apply to this job in its current state; the message says why."""


def check(
    spec: JobSpec,
    accel: Accelerator,
    selected_cards: Sequence[int] = (),
    env_fixes: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[JobSpec, list[Problem]]:
    """The spec as it will run and every problem with it: the target's own checks, then the
    shared validation. May ask a cluster: call it off the UI thread."""
    target = targets.for_spec(spec)
    host = Host(accel, tuple(selected_cards), dict(env_fixes or {}), env)
    prepared, own = target.check(spec, host)
    kind = kinds.for_spec(prepared)
    prepared = kind.prepare(prepared)
    if target.runs_here:  # the job starts with this host's environment and cards
        job_env = {**(os.environ if env is None else env), **prepared.env}
        return prepared, kind.validate(prepared, own, job_env, accel.device_name, here=True)
    if target.starts_ranks:  # the ranks start with the environment the job is submitted with
        job_env = {**(os.environ if env is None else env), **prepared.env}
        return prepared, kind.validate(prepared, own, job_env, None, here=False, starts_ranks=True)
    return prepared, kind.validate(prepared, own, prepared.env, None, here=False)


def submit(
    spec: JobSpec,
    accel: Accelerator,
    selected_cards: Sequence[int] = (),
    env_fixes: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> RunFolder:
    """Prepare and validate the spec, create its run folder and start its supervisor.

    Raises InvalidSpec (with every problem) and creates nothing when the spec is not valid.
    """
    prepared, problems = check(spec, accel, selected_cards, env_fixes, env)
    if problems:
        raise InvalidSpec(problems)
    run = runfolder.create(prepared, accelerator=targets.for_spec(prepared).label(prepared))
    supervisor.start(run, env=env)
    return run


def stop(run: RunFolder) -> None:
    """Ask for a graceful stop: every rank stops at the same step and one checkpoint is saved."""
    _require_active(run, "stop")
    _target(run).request_stop(run)


def kill(run: RunFolder, cancel: threading.Event | None = None) -> str:
    """End the job now (no checkpoint); return what was done.

    The supervisor does it when it is alive (it then records the outcome); if the supervisor is
    gone, the target does it here (bounded; `cancel` cuts its waits short) and this call records
    the outcome, re-reading status.json under the run folder's lock first. A job recorded as ended
    whose target still sees it (`presence` not `ended`: what `r` refuses for) is ended too.
    """
    status, active = _killable(run)
    if active and status.supervisor is not None and status.supervisor.alive():
        os.kill(status.supervisor.pid, signal.SIGTERM)
        return "killing: the supervisor ends every rank and records the outcome"
    try:
        error = _target(run).kill(run, status, cancel)
    except TargetError as exc:
        raise JobControlError(str(exc)) from None
    with _run_lock(run, wait_s=LOCK_WAIT_S):
        now = run.status()
        if now is not None and now.attempt == status.attempt and (not active or not _supervised(now)):
            run.write_status(
                now.with_(state="cancelled", kill_requested=True, ended=time.time(), error=error)
            )
    return error


LOCK_WAIT_S = 10.0
"""How long kill waits for a resume holding the run folder's lock before it records its outcome."""


def resume(run: RunFolder, env: Mapping[str, str] | None = None) -> str:
    """`r`: what was done, in words. Never two copies of one job.

    Under the run folder's lock: refused while the job is active, finished, or the target cannot
    prove that no attempt runs (`presence` running or unknown, saying why and what to do);
    re-attached when the target can follow the attempt (it runs, or ended unseen); else a new
    attempt from the newest complete checkpoint.
    """
    with _run_lock(run):
        status = run.status()
        if status is None:
            raise JobControlError(f"{run.id} has no readable status.json")
        status, state = current(run.status_path, status, time.time())
        if state in ACTIVE:
            raise JobControlError(f"{run.id} is still {state}: stop it first")
        if state == "succeeded":
            raise JobControlError(
                f"{run.id} already finished{kinds.for_spec(run.spec()).finished_words(run)}"
            )
        target = _target(run)
        presence = target.presence(run, status)
        if presence.attach and state == "lost":
            try:
                pid = supervisor.start(run, env=env, attach=True)
                run.write_status(status.with_(supervisor=ProcRef.of(pid)))  # before the lock is released
            except OSError as exc:
                raise JobControlError(f"cannot start a supervisor for {run.id}: {exc}") from None
            return f"re-attached: {presence.reason}"
        if presence.where == "running":
            raise JobControlError(
                f"{run.id} is {state} but {presence.reason}; resuming now would start a second copy. "
                f"End it first: `gaudi-tui jobs stop --force {run.id}` (k twice in Training)"
            )
        if presence.where == "unknown":
            raise JobControlError(
                f"{run.id} may still run ({presence.reason}); nothing was started, so that no second "
                f"copy can run. Try again when it answers, or end it: `gaudi-tui jobs stop --force {run.id}`"
            )
        spec = run.spec()
        kind = kinds.for_spec(spec)
        if (refusal := kind.resume_refusal(run, spec)) is not None:
            raise JobControlError(f"{run.id} cannot be resumed: {refusal}")
        checkpoint = kind.newest_checkpoint(run, spec, target.newest_checkpoint(run))
        if checkpoint is None:
            raise JobControlError(
                f"{run.id} has no complete checkpoint to resume from (stop a running job with s to save one)"
            )
        try:
            supervisor.requeue(run, status, checkpoint, env)
        except OSError as exc:  # a full disk, a folder made read-only: say so, keep the panel
            raise JobControlError(f"cannot resume {run.id}: {exc}") from None
        return f"resuming from {checkpoint.name}"


@contextmanager
def _run_lock(run: RunFolder, wait_s: float = 0.0) -> Iterator[None]:
    """One command at a time on a run folder: an flock on `.resume.lock` (released on close, and by
    the kernel if the process dies). Waits up to `wait_s`, then refuses."""
    path = run.path / RESUME_LOCK
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise JobControlError(f"{run.id} is being resumed by another command right now") from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _target(run: RunFolder) -> Target:
    try:
        return targets.for_spec(run.spec())
    except SpecError as exc:
        raise JobControlError(f"{run.id}: {exc}") from None


def _supervised(status: JobStatus) -> bool:
    return status.supervisor is not None and status.supervisor.alive()


def _require_active(run: RunFolder, action: str) -> JobStatus:
    status = run.status()
    if status is None:
        raise JobControlError(f"{run.id} has no readable status.json")
    status, state = current(run.status_path, status, time.time())
    if state in ACTIVE:
        return status
    raise JobControlError(f"{run.id} is {state}: nothing to {action}")


def _killable(run: RunFolder) -> tuple[JobStatus, bool]:
    """The status a kill acts on, and whether the job is active (its supervisor may do it). A job
    that is lost, failed, stopped or cancelled is killed while its target cannot say it ended (`r` refuses
    such a job and tells the user to end it with a kill)."""
    status = run.status()
    if status is None:
        raise JobControlError(f"{run.id} has no readable status.json")
    status, state = current(run.status_path, status, time.time())
    if state in ACTIVE:
        return status, True
    if state == "succeeded":
        raise JobControlError(f"{run.id} is {state}: nothing to kill")
    presence = _target(run).presence(run, status)
    if presence.where != "ended":
        return status, False
    follow = "; r records how it ended" if presence.attach and state == "lost" else ""
    raise JobControlError(f"{run.id} is {state} and {presence.reason}: nothing to kill{follow}")
