"""In the detached supervisor: submit one attempt with sbatch and follow it to its end.

State comes from the shared queue snapshot (`core.slurm.poll`: one `squeue --json` a refresh for
every supervisor of this machine), then `scontrol show job -o` for a job squeue no longer lists,
then `sacct` where the cluster keeps accounting. A controller that does not answer changes
nothing: the job stays as it was, the log says so, and the supervisor waits (it never decides a job
ended without Slurm saying so). The job's output file (in the run folder: Slurm sites share the
filesystem) is tailed into stdout.log; the ranks' `GAUDI_TUI_RANK` lines go to slurm.json. Rank 0
writes metrics.jsonl and reads the STOP file itself, as in a local job.

Stop and kill follow what 22.05 does with signals: a pending job is cancelled at once (a signal to
a pending job blocks ~95 s); a running job's graceful stop is the STOP file (every rank stops at
one step, one checkpoint); a kill sends TERM to the ranks (`scancel --signal=TERM`, which reaches
srun's tasks and not srun itself — TERM to srun would SIGKILL them), waits `kill_grace_s`, then
cancels the job (`scancel`: TERM to all, KILL after the cluster's KillWait).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace

import gaudi_tui.core.jobs.targets.slurm.record as record_mod
import gaudi_tui.core.jobs.targets.slurm.script as script
import gaudi_tui.core.jobs.targets.slurm.states as states
from gaudi_tui.core.jobs import kinds, runfolder
from gaudi_tui.core.jobs.outcome import error_from_log, last_end_event
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.targets.slurm.record import SlurmRecord
from gaudi_tui.core.jobs.worker.logstream import RANK_PREFIX
from gaudi_tui.core.slurm import model, poll, reasons
from gaudi_tui.core.slurm.cli import Slurm, SlurmError, conf_key

POLL_S = 1.0
FIND_SUBMITTED_S = 30.0
"""After an sbatch without a definite answer, how long the controller must answer without listing
the job's name before the attempt is called failed (time without an answer does not count)."""
END_WAIT_S = 120.0
"""After scancel, how long to wait for Slurm to report the job ended (KillWait is usually 30 s)."""


class Follow:
    """Where the job is, as the supervisor last saw it."""

    def __init__(self, attempt: Attempt, record: SlurmRecord, slurm: Slurm) -> None:
        self.attempt = attempt
        self.run = attempt.run
        self.record = record
        self.slurm = slurm
        self.poll = poll.shared(slurm)
        self.consumed = 0
        self.partial = b""
        self.outage_since: float | None = None
        self.kill_deadline: float | None = None
        self.cancelled = False
        self.stop_seen = False
        self.interrupted = False
        self.fallback_error = ""
        self.stale_since: float | None = None

    # --- the output file -----------------------------------------------------------------------
    def tail(self) -> None:
        out = self.record.output(self.run)
        if out is None:
            return
        try:
            with out.open("rb") as fh:
                fh.seek(self.consumed)
                data = fh.read()
        except OSError:
            return
        if not data:
            return
        self.consumed += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        self._write([line.decode("utf-8", "replace") for line in lines])

    def flush(self) -> None:
        self.tail()
        if self.partial:
            self._write([self.partial.decode("utf-8", "replace")])
            self.partial = b""

    def _write(self, lines: list[str]) -> None:
        plain = []
        ranks = dict(self.record.ranks)
        for line in lines:
            if line.startswith(RANK_PREFIX):
                try:
                    info = json.loads(line[len(RANK_PREFIX) :])
                    ranks[str(int(info["rank"]))] = info
                except (ValueError, KeyError, TypeError):
                    plain.append(line)
            else:
                plain.append(line)
        if plain:
            self.log("".join(p + "\n" for p in plain), prefix=False)
        if ranks != self.record.ranks:
            self.update(ranks=ranks)

    def log(self, text: str, prefix: bool = True) -> None:
        with self.run.log_path.open("a", encoding="utf-8") as fh:
            fh.write(f"[gaudi-tui] {text}\n" if prefix else text)

    def update(self, **changes: object) -> None:
        self.record = replace(self.record, **changes)  # type: ignore[arg-type]
        record_mod.write(self.run, self.record)

    # --- state ---------------------------------------------------------------------------------
    def look(self) -> tuple[str | None, model.QueueJob | None]:
        """The job's Slurm state (None = unknown now) and its queue entry if squeue still lists it."""
        assert self.record.job_id is not None
        snap = self.poll.get()
        if snap.error:
            if self.outage_since is None:
                self.outage_since = time.monotonic()
                self.log(f"{snap.error}; the job's state is unknown until it answers again (waiting)")
            return None, None
        if self.outage_since is not None:
            self.log(f"the Slurm controller answers again after {time.monotonic() - self.outage_since:.0f} s")
            self.outage_since = None
        job = snap.job(self.record.job_id)
        if job is not None:
            return job.state, job
        return self.fallback(), None

    def fallback(self) -> str | None:
        """squeue forgot the job (MinJobAge): scontrol, then sacct, then "gone" (it ended). Only
        scontrol's own "Invalid job id" is gone: any failure (a busy controller's "Socket timed
        out", a refusal) leaves the state unknown. The controller holds every live job: one it no longer knows that accounting calls active is
        STALE (unknown, bounded by `watch`), never a job that runs on."""
        assert self.record.job_id is not None
        try:
            line = self.slurm.show_job(self.record.job_id)
            shown = model.shown_job(line) if line else None
            if shown is not None:
                return shown.state
            acct = states.accounting_state(self.slurm, self.record.job_id)
            if acct is not None:
                return acct if acct in model.ENDED else states.STALE
        except SlurmError as exc:
            if str(exc) != self.fallback_error:
                self.log(f"{exc}; the state of Slurm job {self.record.job_id} is unknown (waiting)")
            self.fallback_error = str(exc)
            return None
        return "GONE"

    def killing(self) -> bool:
        return self.attempt.kill_requested.is_set() or self.attempt.status().kill_requested

    def on_stale(self) -> str | None:
        """Only stale accounting calls the job active: GONE when it is being killed (nothing is left
        to cancel), LEFT (the error saved) after `stale_limit()`, else None (unknown: wait)."""
        if self.killing():
            self.log(f"killed: Slurm's controller no longer knows job {self.record.job_id}")
            return "GONE"
        if self.stale_since is None:
            self.stale_since = time.monotonic()
            self.log(states.stale_words(self.record.job_id, waiting=True))
        if time.monotonic() - self.stale_since <= states.stale_limit():
            return None
        why = states.stale_words(self.record.job_id, waiting=False)
        self.log(f"leaving the job: {why}")
        self.attempt.save(error=why)
        return states.LEFT

    def seen(self, state: str, job: model.QueueJob | None) -> None:
        """Record what the queue says; status.json follows it (queued / running)."""
        words = reasons.state_words(job) if job is not None else state.lower()
        changes: dict[str, object] = {}
        if state != self.record.state or words != self.record.words:
            changes.update(state=state, words=words)
        if job is not None and job.nodes and list(job.nodes) != self.record.nodes:
            changes["nodes"] = list(job.nodes)
        if job is not None and job.restarts > self.record.restarts:
            changes["restarts"] = job.restarts
            spec = self.attempt.spec
            checkpoint = kinds.for_spec(spec).requeue_checkpoint(self.run, spec)
            rerun = (
                f"its ranks continue from {checkpoint}"
                if checkpoint is not None
                else "it runs again from its beginning (no checkpoint it can continue from)"
            )
            self.log(
                f"Slurm requeued job {job.job_id} (restart {job.restarts}, {job.reason}): followed as the same "
                f"attempt; {rerun}"
            )
        if changes:
            self.update(**changes)
        current = self.attempt.status()
        if current.state in ("stopping",):
            return
        if state in states.PENDING and current.state != "queued":
            self.attempt.save(state="queued")
        elif state in ("RUNNING", "COMPLETING") and current.state != "running":
            self.attempt.save(state="running")

    # --- stop and kill -------------------------------------------------------------------------
    def act(self, state: str | None) -> None:
        attempt, run = self.attempt, self.run
        if not run.path.is_dir():
            attempt.kill_requested.set()  # the run folder was deleted: nothing may run on without it
        if run.stop_requested() and not self.stop_seen:
            self.stop_seen = True
            attempt.save(state="stopping", stop_requested=True)
            if state is not None and state not in states.SIGNALLED:
                self.log(
                    f"stop asked while Slurm job {self.record.job_id} is {state.lower()}: cancelled at once"
                )
                self.cancel()
            elif not kinds.for_spec(attempt.spec).stops_by_file(run, attempt.spec):
                self.log(
                    "no callback reads the STOP file in this job: SIGINT to the ranks, then scancel after the grace"
                )
                self.signal("INT")
                self.interrupted = True
                self.kill_deadline = time.monotonic() + attempt.spec.kill_grace_s
        if attempt.kill_requested.is_set() and self.kill_deadline is None:
            attempt.save(state="stopping", kill_requested=True)
            self.kill_deadline = time.monotonic() + attempt.spec.kill_grace_s
            if state in states.SIGNALLED:
                self.signal("TERM")
            else:
                self.cancel()
        if self.kill_deadline is not None and time.monotonic() >= self.kill_deadline and not self.cancelled:
            self.cancel()

    def signal(self, name: str) -> None:
        try:
            self.slurm.scancel(str(self.record.job_id), name)
            self.log(f"SIG{name} sent to the ranks of Slurm job {self.record.job_id}")
        except SlurmError as exc:
            self.log(f"could not signal Slurm job {self.record.job_id}: {exc}")

    def cancel(self) -> None:
        try:
            self.slurm.scancel(str(self.record.job_id))
            self.cancelled = True
            self.log(f"Slurm job {self.record.job_id} cancelled (scancel)")
        except SlurmError as exc:
            self.log(f"could not cancel Slurm job {self.record.job_id}: {exc}; trying again")


def supervise(attempt: Attempt) -> int:
    run = attempt.run
    number = attempt.status().attempt
    slurm = Slurm()
    record = record_mod.read(run) if attempt.attach else None
    if record is not None and record.attempt == number and record.job_id is None:
        found = look_by_name(attempt, slurm, record.job_name)  # the old supervisor died during sbatch
        if found is None:
            attempt.save(
                state="failed", ended=time.time(), error=f"no Slurm job {record.job_name} was queued"
            )
            return 1
        record = replace(record, job_id=found)
        record_mod.write(run, record)
    if record is not None and record.attempt == number:
        runfolder.truncate(run.log_path, record.log_base)
    else:
        record = submit(attempt, slurm, number)
        if record is None:
            return 1
    follow = Follow(attempt, record, slurm)
    if attempt.attach:
        follow.log(f"supervisor re-attached to Slurm job {record.job_id}")
        follow.tail()  # the output so far, read by the last supervisor: its metrics are recorded
    reader = kinds.for_spec(attempt.spec).output_follower(run, attempt.spec, attempt.resume, attempt.attach)
    if reader is not None:
        reader.start()
    state = watch(follow)
    follow.flush()
    if reader is not None:
        reader.close(stopped=follow.stop_seen)
    if state == states.LEFT:
        return 1
    finish(follow, state)
    return 0


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
            found = [j.job_id for j in snap.jobs if j.name == name]
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


def watch(follow: Follow) -> str:
    """Follow the job until Slurm reports it ended; its final state."""
    end_by: float | None = None
    while True:
        state, job = follow.look()
        if state == states.STALE:
            if (ended := follow.on_stale()) is not None:
                return ended
            state = None
        else:
            follow.stale_since = None
        if state is not None:
            follow.seen(state, job)
            if state == "GONE" or state in model.ENDED:
                return state
        follow.act(state)
        follow.tail()
        if follow.cancelled and end_by is None:
            end_by = time.monotonic() + END_WAIT_S
        if end_by is not None and time.monotonic() > end_by:
            follow.log(
                f"Slurm still lists job {follow.record.job_id} as {state} {END_WAIT_S:.0f} s after scancel"
            )
            end_by = time.monotonic() + END_WAIT_S
        time.sleep(POLL_S)


def finish(follow: Follow, state: str) -> None:
    attempt, run, job_id = follow.attempt, follow.run, follow.record.job_id
    end = last_end_event(run.metrics_path, follow.record.metrics_base)
    stopped = bool(end and end.get("stopped"))
    killed = attempt.kill_requested.is_set() or attempt.status().kill_requested
    if state == "GONE":
        state = ("COMPLETED" if end is not None else "FAILED") if not killed else "CANCELLED"
        follow.log(
            f"Slurm no longer knows job {job_id}: it ended ({'an end event' if end else 'no end event'} in metrics)"
        )
    follow.update(state=state, words=state.lower())
    error: str | None
    if killed:
        result, error = "cancelled", f"killed (Slurm job {job_id} {state})"
    elif state == "COMPLETED":
        result, error = ("cancelled", None) if stopped else ("succeeded", None)
    elif (follow.stop_seen and state == "CANCELLED") or (follow.interrupted and state == "FAILED"):
        result, error = "cancelled", None  # stopped while pending, or by SIGINT where no callback runs
    elif state == "CANCELLED":
        result, error = "cancelled", f"Slurm job {job_id} was cancelled outside gaudi-tui (scancel)"
    elif state == "NODE_FAIL":
        nodes = ",".join(follow.record.nodes) or "?"
        result, error = (
            "failed",
            f"a node of Slurm job {job_id} ({nodes}) failed (NODE_FAIL): resumable from the newest complete checkpoint",
        )
    elif state == "TIMEOUT":
        result, error = (
            "failed",
            f"Slurm's time limit ended job {job_id} (TIMEOUT): resumable from the newest complete checkpoint",
        )
    else:
        result, error = "failed", error_from_log(run.log_path) or f"Slurm job {job_id} ended {state}"
    attempt.save(state=result, ended=time.time(), error=error)
