"""In the detached supervisor: submit an attempt with sbatch, and find it by its name and user when
sbatch gave no definite answer (a busy controller may have queued it anyway: never a second copy).

squeue lists every user's jobs and anyone may name a job anything, so a job is the attempt's only
when it is also this user's (`attempt_jobs`): else, after an unclear sbatch answer, a supervisor
could adopt a stranger's job named like the attempt."""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Iterable
from dataclasses import replace

import gaudi_tui.core.jobs.targets.slurm.record as record_mod
import gaudi_tui.core.jobs.targets.slurm.script as script
from gaudi_tui.core.jobs import kinds, runfolder
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.targets.slurm.record import SlurmRecord
from gaudi_tui.core.slurm import poll
from gaudi_tui.core.slurm.cli import Slurm, SlurmError, conf_key
from gaudi_tui.core.slurm.model import QueueJob

FIND_SUBMITTED_S = 30.0
"""After an sbatch without a definite answer, how long the controller must answer without listing
the job's name before the attempt is called failed (time without an answer does not count)."""


def submit(attempt: Attempt, slurm: Slurm, number: int) -> SlurmRecord | None:
    run, spec = attempt.run, attempt.spec
    path = script.script_path(run, number)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    kind = kinds.for_spec(spec)
    argv = kind.rank_argv(run, spec, attempt.resume)
    if (problem := script.path_problem(run)) is not None:
        attempt.save(state="failed", ended=time.time(), error=problem)
        return None
    path.write_text(script.render(spec, run, number, argv, cwd=kind.rank_cwd(run, spec)), encoding="utf-8")
    env = kind.rank_env(run, spec, os.environ)
    name = script.job_name(run, number)
    options = script.options(spec, run, number)
    record = SlurmRecord(
        attempt=number,
        job_name=name,
        script=str(path),
        conf=conf_key(env),
        log_base=runfolder.file_size(run.log_path),
        metrics_base=runfolder.file_size(run.metrics_path),
    )
    record_mod.write(run, record)
    with run.log_path.open("a", encoding="utf-8") as fh:
        fh.write(f"[gaudi-tui] attempt {number}: sbatch {path}\n")
    attempt.save(state="queued", command=("sbatch", "--parsable", *options, str(path)))
    if attempt.kill_requested.is_set():
        attempt.save(state="cancelled", ended=time.time(), error="killed before it was submitted")
        return None
    try:
        job_id = Slurm(env=env, timeout=slurm.timeout).sbatch(path, run.path, options)
    except SlurmError as exc:
        if exc.definite:
            attempt.save(state="failed", ended=time.time(), error=f"Slurm refused the job: {exc}")
            return None
        with run.log_path.open("a", encoding="utf-8") as fh:
            fh.write(f"[gaudi-tui] {exc}: the job may have been queued; looking for {name} in the queue\n")
        found = look_by_name(attempt, slurm, name)
        if found is None:
            attempt.save(state="failed", ended=time.time(), error=f"{exc}; Slurm then listed no job {name}")
            return None
        job_id = found
    with run.log_path.open("a", encoding="utf-8") as fh:
        fh.write(f"[gaudi-tui] Slurm job {job_id} submitted\n")
    record = replace(record, job_id=job_id, state="PENDING", log_base=runfolder.file_size(run.log_path))
    record_mod.write(run, record)
    return record


def look_by_name(attempt: Attempt, slurm: Slurm, name: str) -> int | None:
    """sbatch failed without a definite answer (a busy controller, its time limit), or the last
    supervisor died during it: did the controller take the job anyway? Its id when a queue lists
    the attempt's (unique) name; None only once the controller has answered for FIND_SUBMITTED_S
    without it. While squeue fails nothing is known, and the look goes on (never a second copy)."""
    answered: float | None = None
    silent = False
    while answered is None or time.monotonic() - answered < FIND_SUBMITTED_S:
        snap = poll.take(slurm)
        if snap.error is None:
            found = [j.job_id for j in attempt_jobs(snap.jobs, name)]
            if found:
                return max(found)
            answered = answered if answered is not None else time.monotonic()
        elif not silent:
            silent = True
            with attempt.run.log_path.open("a", encoding="utf-8") as fh:
                fh.write(
                    f"[gaudi-tui] {snap.error}: whether {name} was queued is unknown until it answers (waiting)\n"
                )
        time.sleep(2.0)
    return None


def attempt_jobs(jobs: Iterable[QueueJob], name: str, uid: int | None = None) -> list[QueueJob]:
    """The jobs named `name` that user `uid` (this process's by default) submitted: squeue's
    user_name is that user's login name, or its numeric id where squeue gives no name."""
    uid = os.getuid() if uid is None else uid
    try:
        login: str | None = pwd.getpwuid(uid).pw_name
    except KeyError:  # a user the passwd database does not know: squeue names it by its id
        login = None
    return [j for j in jobs if j.name == name and j.user in (login, str(uid))]
