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

import codecs
import os
import time
from dataclasses import replace
from functools import partial
from typing import Any

import gaudi_tui.core.jobs.targets.slurm.record as record_mod
import gaudi_tui.core.jobs.targets.slurm.states as states
import gaudi_tui.core.jobs.targets.slurm.submitting as submitting
from gaudi_tui.core.jobs import kinds, runfolder
from gaudi_tui.core.jobs.outcome import error_from_log, last_end_event
from gaudi_tui.core.jobs.readers import lines
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.targets.slurm.record import SlurmRecord
from gaudi_tui.core.jobs.targets.watch_checks import WatchChecks
from gaudi_tui.core.jobs.worker.logstream import RANK_PREFIX
from gaudi_tui.core.slurm import model, poll, reasons
from gaudi_tui.core.slurm.cli import Slurm, SlurmError
from gaudi_tui.core.untrusted.data import Untrusted, integer, loads

POLL_S = 1.0
END_WAIT_S = 120.0
"""After scancel, how long to wait for Slurm to report the job ended (KillWait is usually 30 s)."""
READ_CHUNK = 1024 * 1024
TAIL_CHUNKS = 64
"""The job's output is copied in chunks, at most this many a poll (the state is looked at between)."""


class Follow:
    """Where the job is, as the supervisor last saw it."""

    def __init__(self, attempt: Attempt, record: SlurmRecord, slurm: Slurm) -> None:
        self.attempt = attempt
        self.run = attempt.run
        self.record = record
        self.slurm = slurm
        self.poll = poll.shared(slurm)
        self.consumed = 0
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.lines = lines.Lines("\n", passes=True)
        self.outage_since: float | None = None
        self.kill_deadline: float | None = None
        self.cancelled = False
        self.stop_seen = False
        self.interrupted = False
        self.fallback_error = ""
        self.stale_since: float | None = None
        self.checks = WatchChecks("the job is followed on")

    # --- the output file -----------------------------------------------------------------------
    def tail(self) -> bool:
        """Copy what the job's output file gained (bounded chunks); True when there was something."""
        out = self.record.output(self.run)
        if out is None:
            return False
        got = False
        try:
            with out.open("rb") as fh:
                if os.fstat(fh.fileno()).st_size < self.consumed:  # cut back or made anew: all new
                    self.consumed = 0
                fh.seek(self.consumed)
                for _ in range(TAIL_CHUNKS):
                    data = fh.read(READ_CHUNK)
                    if not data:
                        break
                    got = True
                    self.consumed += len(data)
                    self._copy(self.decoder.decode(data))
        except OSError:
            pass
        return got

    def flush(self) -> None:
        while self.tail():
            pass
        self._copy(self.decoder.decode(b"", final=True))
        if rest := self.lines.take():
            self._write([rest])

    def _copy(self, text: str) -> None:
        """Complete lines to `_write`; a bar's redraws and a line past the limit as they are."""
        lines.deliver(self.lines.pieces(text), self._write, lambda t: self.log(t, prefix=False))

    def _write(self, lines: list[str]) -> None:
        plain = []
        ranks = dict(self.record.ranks)
        for line in lines:
            if line.startswith(RANK_PREFIX):
                info = _rank_info(line[len(RANK_PREFIX) :])
                if info is None:
                    plain.append(line)
                else:
                    ranks[str(info["rank"])] = info
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
        found = submitting.look_by_name(
            attempt, slurm, record.job_name
        )  # the old supervisor died during sbatch
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
        record = submitting.submit(attempt, slurm, number)
        if record is None:
            return 1
    follow = Follow(attempt, record, slurm)
    if attempt.attach:
        follow.log(f"supervisor re-attached to Slurm job {record.job_id}")
        while record.metrics_base is None and follow.tail():
            pass  # a record of an older panel: the output so far is taken as read
    reader = kinds.for_spec(attempt.spec).output_follower(run, attempt.spec, attempt.resume, attempt.attach)
    if reader is not None:
        if attempt.attach and record.metrics_base is not None:
            reader.skip_recorded(record.metrics_base)  # it reads the output tailed afresh from here
        reader.start()
    state = watch(follow)
    follow.flush()
    if reader is not None:
        reader.close(stopped=follow.stop_seen)
    if state == states.LEFT:
        return 1
    finish(follow, state)
    return 0


def watch(follow: Follow) -> str:
    """Follow the job until Slurm reports it ended; its final state. Each poll's checks go on past
    one that raises (`Follow.checks`)."""
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
            follow.checks.run("recording the queue's state", partial(follow.seen, state, job))
            if state == "GONE" or state in model.ENDED:
                return state
        follow.checks.run("the stop and kill", partial(follow.act, state))
        follow.checks.run("copying the job's output", follow.tail)
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
    end = last_end_event(run.metrics_path, follow.record.metrics_base or 0)
    stopped = bool(end and end.get("stopped")) or follow.interrupted  # or it exited 0 on our SIGINT
    killed = attempt.kill_requested.is_set() or attempt.status().kill_requested
    if state == "GONE":
        state = ("COMPLETED" if end is not None else "FAILED") if not killed else "CANCELLED"
        follow.log(
            f"Slurm no longer knows job {job_id}: it ended ({'an end event' if end else 'no end event'} in metrics)"
        )
    # the end is saved in status.json below even when slurm.json cannot be written now (a supervisor
    # that died here left a job that had ended shown as lost)
    follow.checks.run("recording the job's end", partial(follow.update, state=state, words=state.lower()))
    error: str | None
    if killed:
        result, error = "cancelled", f"killed (Slurm job {job_id} {state})"
    elif state == "COMPLETED":
        result, error = ("stopped", None) if stopped else ("succeeded", None)
    elif (follow.stop_seen and state == "CANCELLED") or (follow.interrupted and state == "FAILED"):
        result, error = "stopped", None  # stopped while pending, or by SIGINT where no callback runs
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
        told = kinds.for_spec(attempt.spec).failure_words(run) or error_from_log(run.log_path)
        result, error = "failed", told or f"Slurm job {job_id} ended {state}"
    attempt.save(state=result, ended=time.time(), error=error)


def _rank_info(payload: str) -> dict[str, Any] | None:
    """A rank line of the job's output as the object it should be (untrusted.data: bounded nesting,
    64-bit, text; a whole-number rank), else None: the line is then the job's log."""
    try:
        info = loads(payload, what="a rank line")
    except Untrusted:
        return None
    if not isinstance(info, dict) or integer(info.get("rank"), lo=0) is None:
        return None
    return info
