"""The supervisor's side of a Ray job: submit (or re-attach), mirror its log, act on STOP and kill,
record the outcome.

Every request is bounded (`cluster.Jobs`). While the cluster does not answer, the loop still acts:
STOP and kill are remembered and sent once it answers; for up to `unreachable_limit()` the
supervisor keeps trying, then leaves the job as it is (it may still run: the run shows as lost,
and `r` re-attaches once the cluster answers). A job the cluster no longer knows (head restarted,
job deleted) ends the attempt as failed, resumable from the newest checkpoint.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

import gaudi_tui.core.jobs.targets.ray.cluster as cluster
from gaudi_tui.core.jobs import kinds, runfolder
from gaudi_tui.core.jobs.outcome import error_from_log, last_end_event
from gaudi_tui.core.jobs.targets import Attempt, seconds_from_env
from gaudi_tui.core.jobs.targets.ray.cluster import JobGone, JobInfo, Jobs, NoAnswer
from gaudi_tui.core.jobs.targets.ray.mirror import LogMirror
from gaudi_tui.core.jobs.targets.ray.nodes import ClusterError, nodes_or_none, request_timeout
from gaudi_tui.core.jobs.targets.ray.record import ClusterRecord, read_record, submission_id, write_record
from gaudi_tui.core.jobs.targets.watch_checks import WatchChecks

POLL_S = 1.0
LOG_POLL_S = 5.0
"""While the log stream is down, the whole log is fetched this often (and the stream restarted)."""
RECORD_S = 5.0
NODE_DEATH_WAIT_S = 30.0
SUBMIT_RETRY_S = 60.0
UNREACHABLE_ENV = "GAUDI_TUI_RAY_UNREACHABLE_S"
DEFAULT_UNREACHABLE_S = 900.0
_LOST_WORKER = re.compile(
    r"ActorDied|ActorUnavailable|RayActorError|WorkerGroup|node .*(died|dead|lost)|unexpected system error",
    re.IGNORECASE,
)


def unreachable_limit() -> float:
    """How long the supervisor keeps trying a cluster that does not answer before it leaves the
    job as it is: 15 min, or $GAUDI_TUI_RAY_UNREACHABLE_S."""
    return seconds_from_env(UNREACHABLE_ENV, DEFAULT_UNREACHABLE_S)


class Left(Exception):
    """The supervisor leaves the job without an outcome (the cluster did not answer for too long)."""


class Supervision:
    def __init__(self, attempt: Attempt) -> None:
        self.attempt = attempt
        self.run, self.spec = attempt.run, attempt.spec
        self.jobs = Jobs(self.spec.ray_address)
        self.mirror: LogMirror | None = None
        self.down_since: float | None = None
        self.pending: set[str] = set()
        self.checks = WatchChecks("the job is followed on", passes=(Left,))
        self.stopped = self.flagged = False
        """The cluster took the stop of the job / the stop flag (each sent once)."""

    def supervise(self) -> int:
        attempt, run = self.attempt, self.run
        record = read_record(run) if attempt.attach else None
        if record is None:
            try:
                record = self._submit(attempt.status().attempt)
            except Left:
                return 1
            if record is None:
                return 1
            self.mirror = LogMirror(run, record)
        else:
            self.jobs = Jobs(record.address)  # where it was submitted
            runfolder.truncate(run.log_path, record.log_base)  # mirrored afresh from the job's own log
            runfolder.truncate(run.metrics_path, record.metrics_base)
            self.mirror = LogMirror(run, record)
            self.note(f"re-attached to Ray job {record.submission_id}")
            if attempt.status().kill_requested:  # the kill the last supervisor could not finish
                attempt.kill_requested.set()
        # What reads metrics from the mirrored output (your command without the Trainer callback).
        reader = kinds.for_spec(self.spec).output_follower(run, self.spec, attempt.resume, attempt.attach)
        if reader is not None:
            reader.start()
        stream = LogStream(self.jobs, record.submission_id, self.mirror)
        stream.start()
        try:
            info = self._watch(record, stream)
        except Left:
            return 1
        stream.join(timeout=request_timeout() + 5)
        try:
            self.mirror.feed_from(self.jobs.logs(record.submission_id))
        except ClusterError as exc:  # what was mirrored stays
            self.note(f"cannot read the job's final log: {exc}")
        self.mirror.flush_partial()
        if reader is not None:
            reader.close(stopped=self.mirror.stopped_by is not None)
        record = replace(
            record,
            ranks=self.mirror.ranks,
            ray_job_id=(info.job_id if info else None) or record.ray_job_id,
            nodes_seen=[asdict(n) for n in nodes_or_none(record.address)],
        )
        # the end is saved in status.json even when the record cannot be written now
        self.checks.run("recording the job's ranks", lambda: self._record(record))
        self._finish(record, info)
        return 0

    def note(self, text: str) -> None:
        if self.mirror is not None:
            self.mirror.note(text)
        else:
            with self.run.log_path.open("a", encoding="utf-8") as fh:
                fh.write(f"[gaudi-tui] {text}\n")

    def _submit(self, number: int) -> ClusterRecord | None:
        attempt, run, spec = self.attempt, self.run, self.spec
        sid = submission_id(run, number)
        argv = cluster.entrypoint(spec, run, attempt.resume)
        record = ClusterRecord(
            address=spec.ray_address,
            submission_id=sid,
            attempt=number,
            session=_session(spec.ray_address),
            metrics_base=runfolder.file_size(run.metrics_path),
            entrypoint=shlex.join(argv),
        )
        self.note(f"attempt {number}: Ray job {sid} on {spec.ray_address}: {record.entrypoint}")
        record = replace(record, log_base=runfolder.file_size(run.log_path))
        write_record(run, record)  # before submitting: a new supervisor finds the job by its id
        attempt.save(state="queued", command=tuple(argv))
        deadline = time.monotonic() + SUBMIT_RETRY_S
        while True:
            try:
                self.jobs.submit(
                    sid,
                    record.entrypoint,
                    cluster.job_env(spec, run, sid),
                    {"gaudi_tui_run": run.id, "name": spec.name},
                    kinds.for_spec(spec).cluster_entry(spec),
                )
                return record
            except NoAnswer as exc:  # it may have arrived: ask before trying again
                self._down(exc)
                try:
                    self.jobs.info(sid)
                    return record
                except JobGone:
                    pass
                except NoAnswer as again:
                    self._down(again)
            except ClusterError as exc:
                # A head that just started has no job agent yet: "please try again later".
                retry = "try again later" in str(exc) and not attempt.kill_requested.is_set()
                if not retry or time.monotonic() > deadline:
                    attempt.save(state="failed", ended=time.time(), error=f"Ray refused the job: {exc}")
                    return None
            time.sleep(2.0)

    def _watch(self, record: ClusterRecord, stream: LogStream) -> JobInfo | None:
        """Follow the job until it is terminal (its last JobInfo), or None when the cluster no longer
        knows it. STOP and kill are acted on in every round, whether the cluster answers or not."""
        attempt, run, sid = self.attempt, self.run, record.submission_id
        last_logs = last_record = time.monotonic()
        while True:
            if not run.path.is_dir():
                attempt.kill_requested.set()  # the run folder was deleted: nothing may run on without it
            self.checks.run("the stop and kill", lambda: self._act(sid))
            try:
                info = self.jobs.info(sid)
            except JobGone as exc:
                try:  # "does not exist" speaks for the job only on the cluster it was submitted to
                    self._leave_if_elsewhere(record)
                except ClusterError as again:
                    self._down(again)
                    time.sleep(POLL_S)
                    continue
                self.note(str(exc))
                return None
            except ClusterError as exc:
                self._down(exc)
                time.sleep(POLL_S)
                continue
            self._up()
            if info.state in cluster.TERMINAL:
                return info
            if info.state == "RUNNING" and attempt.status().state == "queued":
                attempt.save(state="running")
            now = time.monotonic()
            if not stream.is_alive() and now - last_logs > LOG_POLL_S:
                last_logs = now
                if self.checks.run("copying the job's log", lambda: self._fetch_log(stream, sid)):  # noqa: B023 - called at once
                    stream = stream.again()
            if now - last_record > RECORD_S:
                last_record = now
                ranks = dict(self.mirror.ranks) if self.mirror else {}
                if ranks != record.ranks or info.job_id != record.ray_job_id:
                    new = replace(record, ranks=ranks, ray_job_id=info.job_id)
                    if self.checks.run("recording the job's ranks", lambda: self._record(new)):  # noqa: B023 - called at once
                        record = new
            time.sleep(POLL_S)

    def _act(self, sid: str) -> None:
        """The stop and kill the panel asked for: saved in status.json, sent to the cluster (each
        once it went through; tried again at the next poll while the cluster does not answer)."""
        attempt, run = self.attempt, self.run
        if attempt.kill_requested.is_set() and not attempt.status().kill_requested:
            attempt.save(state="stopping", kill_requested=True)
        if attempt.kill_requested.is_set() and not self.stopped:
            self.stopped = self._try(lambda: self.jobs.stop(sid), "stop the job")
        if run.stop_requested() and not attempt.status().stop_requested:
            attempt.save(state="stopping", stop_requested=True)
        if run.stop_requested() and not self.flagged:
            self.flagged = self._try(
                lambda: cluster.raise_stop_flag(self.jobs, self.spec.ray_python, sid), "raise the stop flag"
            )

    def _fetch_log(self, stream: LogStream, sid: str) -> bool:
        """The job's whole log fed to the mirror (when its stream ended): True when it was read."""
        return self._try(lambda: stream.mirror.feed_from(self.jobs.logs(sid)), "read the log")

    def _record(self, record: ClusterRecord) -> bool:
        write_record(self.run, record)
        return True

    def _try(self, action: Callable[[], object], doing: str) -> bool:
        """Do `action` now if the cluster answers; False (said once) to try again next round."""
        try:
            action()
        except JobGone:
            return True  # nothing left to act on; the watch sees it next
        except ClusterError as exc:
            if doing not in self.pending:
                self.pending.add(doing)
                self.note(f"cannot {doing} yet ({exc}); trying again every {POLL_S:g} s")
            self._down(exc)
            return False
        if doing in self.pending:
            self.pending.discard(doing)
            self.note(f"done: {doing}")
        return True

    def _down(self, exc: ClusterError) -> None:
        now = time.monotonic()
        limit = unreachable_limit()
        if self.down_since is None:
            self.down_since = now
            self.note(f"the Ray cluster does not answer ({exc}); trying again for up to {limit:g} s")
        if now - self.down_since > limit:
            kill = "; the kill was not delivered: k again" if self.attempt.kill_requested.is_set() else ""
            error = (
                f"the Ray cluster at {self.jobs.address} has not answered for {limit:g} s ({exc}): the job "
                f"may still run there; r re-attaches once it answers{kill}"
            )
            self.note(f"leaving the job: {error}")
            self.attempt.save(error=error)
            raise Left

    def _leave_if_elsewhere(self, record: ClusterRecord) -> None:
        """Another cluster answers at the job's address now: its end is unknown (it may run on where
        it was submitted), so the supervisor leaves it."""
        if (other := cluster.other_cluster(record)) is not None:
            self.note(f"leaving the job: {other}")
            self.attempt.save(error=other)
            raise Left

    def _up(self) -> None:
        if self.down_since is not None:
            self.note(f"the Ray cluster answers again after {time.monotonic() - self.down_since:.0f} s")
            self.down_since = None

    def _finish(self, record: ClusterRecord, info: JobInfo | None) -> None:
        attempt, run = self.attempt, self.run
        end = last_end_event(run.metrics_path, record.metrics_base)
        now = time.time()
        if info is None:
            attempt.save(
                state="failed",
                ended=now,
                error=(
                    f"Ray job {record.submission_id} is no longer known to the cluster at {record.address} "
                    "(its head restarted, or the job was deleted); resumable from the newest complete checkpoint"
                ),
            )
            return
        code = info.driver_exit_code
        if attempt.kill_requested.is_set():
            left = cluster.verify_ended(record.address, info.job_id)
            error = "killed on the cluster" + (f"; {left}" if left else "")
            attempt.save(state="cancelled", ended=now, exit_code=code, error=error)
        elif self.mirror is not None and self.mirror.stopped_by is not None:
            attempt.save(
                state="stopped", ended=now, exit_code=code, error=f"stopped by {self.mirror.stopped_by}"
            )
        elif info.state == "SUCCEEDED" and end is not None and end.get("stopped"):
            attempt.save(state="stopped", ended=now, exit_code=code, error=None)
        elif info.state == "SUCCEEDED":
            attempt.save(state="succeeded", ended=now, exit_code=code, error=None)
        elif info.state == "STOPPED":
            attempt.save(state="cancelled", ended=now, exit_code=code, error="stopped on the cluster")
        else:
            attempt.save(state="failed", ended=now, exit_code=code, error=failure(record, info, run.log_path))


def _session(address: str) -> str:
    """The cluster's identity for the record ('' when the dashboard does not say or answer now)."""
    try:
        return cluster.session_name(address)
    except ClusterError:
        return ""


def failure(record: ClusterRecord, info: JobInfo, log: Path) -> str:
    """Why a Ray job failed: a dead node of its ranks first, then the job's own error line.

    A worker's death can reach the job before the cluster has declared its node dead (health
    checks take seconds), so when the error reads like a lost worker the nodes are asked again
    for up to NODE_DEATH_WAIT_S.
    """
    own = error_from_log(log) or (info.message.strip().splitlines() or [""])[-1]
    mine = set(record.nodes())
    lost_worker = _LOST_WORKER.search(f"{own}\n{info.message}") is not None
    deadline = time.monotonic() + (NODE_DEATH_WAIT_S if lost_worker else 0.0)
    while True:
        dead = [n for n in nodes_or_none(record.address) if not n.alive and n.node_id in mine]
        if dead or time.monotonic() >= deadline:
            break
        time.sleep(1.0)
    if dead:
        names = ", ".join(n.label for n in dead)
        return f"node {names} died mid-job (resumable from the newest complete checkpoint): {own}"[:600]
    return own[:600] or f"the Ray job failed (exit {info.driver_exit_code})"


HEARTBEAT_S = 10.0
"""The log stream pings the dashboard this often; no answer within half of it ends the stream (a
frozen tunnel), and the supervisor fetches the log and starts a new stream."""


class LogStream(threading.Thread):
    """Follows the job's log over the dashboard's websocket (the SDK's `tail_job_logs` endpoint),
    from the start of the log, with a heartbeat and a connect timeout the SDK does not set."""

    def __init__(self, jobs: Jobs, sid: str, mirror: LogMirror) -> None:
        super().__init__(name=f"log-{sid}", daemon=True)
        self.jobs, self.sid, self.mirror = jobs, sid, mirror

    def again(self) -> LogStream:
        stream = LogStream(self.jobs, self.sid, self.mirror)
        stream.start()
        return stream

    def run(self) -> None:
        try:
            asyncio.run(self._follow())
        except Exception as exc:  # noqa: BLE001 - the supervisor falls back to fetching the log
            print(f"log stream of {self.sid} ended: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    async def _follow(self) -> None:
        import aiohttp

        sdk = self.jobs.sdk()
        timeout = aiohttp.ClientTimeout(total=None, connect=request_timeout(), sock_connect=request_timeout())
        offset = 0
        async with (
            aiohttp.ClientSession(cookies=sdk._cookies, headers=sdk._headers, timeout=timeout) as session,
            session.ws_connect(
                f"{self.jobs.address}/api/jobs/{self.sid}/logs/tail",
                heartbeat=HEARTBEAT_S,
                ssl=sdk._ssl_context,
            ) as ws,
        ):
            async for msg in ws:
                if msg.type != aiohttp.WSMsgType.TEXT:
                    break
                self.mirror.feed_at(offset, msg.data)
                offset += len(msg.data)
