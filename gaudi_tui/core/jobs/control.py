"""What the panel and `gaudi-tui train`/`jobs` do to jobs: launch, stop, kill, resume."""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from gaudi_tui.core import processes
from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.jobs import launch, runfolder, supervisor
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import ACTIVE, JobStatus, ProcRef, effective_state
from gaudi_tui.core.jobs.validate import InvalidSpec, Problem, hardware, validate

log = logging.getLogger(__name__)

RESUME_LOCK = ".resume.lock"
KILL_WAIT_S = 5.0


class JobControlError(RuntimeError):
    """The action does not apply to this job in its current state; the message says why."""


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
    if spec.target == "ray":
        from gaudi_tui.core.jobs import control_ray

        return control_ray.submit(spec, env)
    prepared, problems = prepare(spec, accel, selected_cards, env_fixes, env)
    if problems:
        raise InvalidSpec(problems)
    run = runfolder.create(prepared, accelerator=accel.kind)
    supervisor.start(run, env=env)
    return run


def prepare(
    spec: JobSpec,
    accel: Accelerator,
    selected_cards: Sequence[int] = (),
    env_fixes: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[JobSpec, list[Problem]]:
    """The spec as it will run on this host, and every problem with it."""
    prepared = launch.prepare(spec, accel, selected_cards, env_fixes)
    if prepared.kind == "command":
        from gaudi_tui.core.jobs.kinds import command

        prepared = command.prepare(prepared)
        job_env = {**(os.environ if env is None else env), **prepared.env}
        return prepared, [*hardware(prepared, accel, job_env), *command.check(prepared, job_env)]
    return prepared, validate(prepared, accel, env)


def stop(run: RunFolder) -> None:
    """Ask for a graceful stop: every rank stops at the same step and one checkpoint is saved."""
    _require_active(run, "stop")
    run.request_stop()


def kill(run: RunFolder, cancel: threading.Event | None = None) -> None:
    """SIGTERM to the launcher, then SIGKILL to every recorded process after the spec's grace.

    The supervisor does it when it is alive (it then records the outcome); if the supervisor is
    gone, this call does it itself and waits out the grace period (`cancel` cuts the wait short).
    """
    status = _require_active(run, "kill")
    if status.supervisor is not None and status.supervisor.alive():
        os.kill(status.supervisor.pid, signal.SIGTERM)
        return
    if is_ray(run):
        from gaudi_tui.core.jobs import control_ray

        try:
            return control_ray.kill(run)
        except control_ray.RayControlError as exc:
            raise JobControlError(str(exc)) from None
    grace = run.spec().kill_grace_s
    if status.launcher is not None and (proc := status.launcher.process()) is not None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
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
        error += (
            f"; PID {', '.join(str(p.pid) for p in stuck)} survived SIGKILL and was left behind (check dmesg)"
        )
    run.write_status(status.with_(state="cancelled", kill_requested=True, ended=time.time(), error=error))


ENDING_GRACE_S = 10.0
"""How long after a job ended its processes may still be exiting before resume calls them stray."""


def resume(run: RunFolder, env: Mapping[str, str] | None = None) -> Path:
    """Start the job again from its newest complete checkpoint (passed explicitly); return it.

    Never two copies of one job: it refuses while any recorded process of the job still runs, and
    holds a lock on the run folder while it checks and starts, so two resumes at once cannot both
    start a supervisor.
    """
    with _resume_lock(run):
        return _resume_locked(run, env)


@contextmanager
def _resume_lock(run: RunFolder) -> Iterator[None]:
    path = run.path / RESUME_LOCK
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise JobControlError(f"{run.id} is being resumed by another command right now") from None
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _resume_locked(run: RunFolder, env: Mapping[str, str] | None) -> Path:
    status = run.status()
    if status is None:
        raise JobControlError(f"{run.id} has no readable status.json")
    state = effective_state(status, time.time())
    if state in ACTIVE:
        raise JobControlError(f"{run.id} is still {state}: stop it first")
    if state == "succeeded":
        where = "" if run.spec().kind == "command" else f"; its weights are in {run.model_dir}"
        raise JobControlError(f"{run.id} already finished{where}")
    running = _alive_refs(status, until=(status.ended or 0.0) + ENDING_GRACE_S)
    if running:
        pids = ", ".join(str(r.pid) for r in running)
        raise JobControlError(
            f"{run.id} is {state} but its processes still run (PID {pids}); resuming now would start a "
            f"second copy. End them first: `gaudi-tui jobs stop --force {run.id}` (k twice in Training), "
            f"or `kill {pids.replace(', ', ' ')}`"
        )
    spec = run.spec()
    if spec.kind == "command":
        from gaudi_tui.core.jobs.kinds import command

        if (why := command.resume_problem(run, spec)) is not None:
            raise JobControlError(f"{run.id} cannot be resumed: {why}")
        checkpoint = command.newest_checkpoint(run, spec)
    else:
        checkpoint = run.newest_complete_checkpoint()
    if checkpoint is None:
        raise JobControlError(
            f"{run.id} has no complete checkpoint to resume from (stop a running job with s to save one)"
        )
    supervisor.requeue(run, status, checkpoint, env)
    return checkpoint


def resume_any(run: RunFolder, env: Mapping[str, str] | None = None) -> str:
    """`r` for any target: what was done, in words (local jobs: `resume`; Ray jobs: `control_ray`).
    Both hold the run folder's resume lock, so two resumes at once cannot both start."""
    if is_ray(run):
        from gaudi_tui.core.jobs import control_ray

        with _resume_lock(run):
            try:
                return control_ray.resume(run, env)
            except control_ray.RayControlError as exc:
                raise JobControlError(str(exc)) from None
    return f"resuming from {resume(run, env).name}"


def is_ray(run: RunFolder) -> bool:
    from gaudi_tui.core.jobs.spec import SpecError

    try:
        return run.spec().target == "ray"
    except SpecError:
        return False


def _require_active(run: RunFolder, action: str):  # noqa: ANN202 - JobStatus
    status = run.status()
    if status is None:
        raise JobControlError(f"{run.id} has no readable status.json")
    state = effective_state(status, time.time())
    orphan = state == "lost" and (_any_alive(status) or is_ray(run))
    if state not in ACTIVE and not (action == "kill" and orphan):
        raise JobControlError(f"{run.id} is {state}: nothing to {action}")
    return status


def _any_alive(status) -> bool:  # noqa: ANN001
    return any(r.alive() for r in (status.launcher, *status.workers) if r is not None)


def _alive_refs(status: JobStatus, until: float = 0.0) -> list[ProcRef]:
    """Every recorded process of the job (supervisor, launcher, workers) that is still the same
    process. Until the wall-clock time `until`, those still alive are given time to go: right after a
    job ends, its supervisor (which wrote the final state) and its ranks are still exiting."""
    refs = [r for r in (status.supervisor, status.launcher, *status.workers) if r is not None and r.alive()]
    while refs and time.time() < until:
        time.sleep(0.1)
        refs = [r for r in refs if r.alive()]
    return refs
