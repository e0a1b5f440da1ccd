"""The supervisor's side of a Ray job: submit (or re-attach), mirror, act on STOP and kill, record
the outcome."""

from __future__ import annotations

import asyncio
import re
import shlex
import sys
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from gaudi_tui.core.jobs.outcome import error_from_log, last_end_event
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.targets.ray.cluster import client, entrypoint, job_env, request_stop, verify_ended
from gaudi_tui.core.jobs.targets.ray.mirror import LogMirror
from gaudi_tui.core.jobs.targets.ray.nodes import ClusterError, nodes_or_none
from gaudi_tui.core.jobs.targets.ray.record import (
    ClusterRecord,
    read_record,
    submission_id,
    write_record,
)

POLL_S = 1.0
NODE_DEATH_WAIT_S = 30.0
SUBMIT_RETRY_S = 60.0
_LOST_WORKER = re.compile(
    r"ActorDied|ActorUnavailable|RayActorError|WorkerGroup|node .*(died|dead|lost)|unexpected system error",
    re.IGNORECASE,
)


class Supervision:
    def supervise(self, attempt: Attempt) -> int:
        run, spec = attempt.run, attempt.spec
        number = attempt.status().attempt
        try:
            jobs = client(spec.ray_address)
        except ClusterError as exc:
            attempt.save(state="failed", ended=time.time(), error=str(exc))
            return 1
        record = read_record(run) if attempt.attach else None
        if record is None:
            record = self._submit(attempt, jobs, number)
            if record is None:
                return 1
        else:
            _truncate(run.log_path, record.log_base)
            _truncate(run.metrics_path, record.metrics_base)
        mirror = LogMirror(run, record)
        tail = threading.Thread(target=_tail, args=(jobs, record.submission_id, mirror), daemon=True)
        tail.start()
        info = self._watch(attempt, jobs, record, mirror, tail)
        tail.join(timeout=15)
        try:
            mirror.feed_from(jobs.get_job_logs(record.submission_id))
        except Exception as exc:  # noqa: BLE001 - the cluster may be gone; what was mirrored stays
            print(f"cannot read the job's final log: {exc}", file=sys.stderr, flush=True)
        mirror.flush_partial()
        record = replace(
            record,
            ranks=mirror.ranks,
            ray_job_id=getattr(info, "job_id", None) or record.ray_job_id,
            nodes_seen=[asdict(n) for n in nodes_or_none(record.address)],
        )
        write_record(run, record)
        self._finish(attempt, jobs, record, info)
        return 0

    def _submit(self, attempt: Attempt, jobs: Any, number: int) -> ClusterRecord | None:
        run, spec = attempt.run, attempt.spec
        sid = submission_id(run, number)
        argv = entrypoint(spec, run, attempt.resume)
        record = ClusterRecord(
            address=spec.ray_address,
            submission_id=sid,
            attempt=number,
            log_base=_size(run.log_path),
            metrics_base=_size(run.metrics_path),
            entrypoint=shlex.join(argv),
        )
        write_record(run, record)
        with run.log_path.open("a", encoding="utf-8") as fh:
            fh.write(
                f"[gaudi-tui] attempt {number}: Ray job {sid} on {spec.ray_address}: {record.entrypoint}\n"
            )
        record = replace(record, log_base=_size(run.log_path))
        write_record(run, record)
        attempt.save(state="queued", command=tuple(argv))
        deadline = time.monotonic() + SUBMIT_RETRY_S
        while True:
            try:
                jobs.submit_job(
                    entrypoint=record.entrypoint,
                    submission_id=sid,
                    runtime_env={"env_vars": job_env(spec, sid)},
                    metadata={"gaudi_tui_run": run.id, "name": spec.name},
                )
                return record
            except Exception as exc:  # noqa: BLE001 - the SDK raises plain RuntimeError/ConnectionError
                if "already exists" in str(exc):  # submitted before this supervisor died
                    return record
                # A head that just started has no job agent yet: "please try again later".
                retry = "try again later" in str(exc) and not attempt.kill_requested.is_set()
                if not retry or time.monotonic() > deadline:
                    attempt.save(state="failed", ended=time.time(), error=f"Ray refused the job: {exc}")
                    return None
            time.sleep(2.0)

    def _watch(
        self, attempt: Attempt, jobs: Any, record: ClusterRecord, mirror: LogMirror, tail: threading.Thread
    ) -> Any:
        """Follow the job until it is terminal; act on STOP and kill. Returns the last JobInfo."""
        run, spec = attempt.run, attempt.spec
        info: Any = None
        flagged = killed = False
        unreachable_since: float | None = None
        last_record = time.monotonic()
        while True:
            try:
                info = jobs.get_job_info(record.submission_id)
                unreachable_since = None
            except Exception as exc:  # noqa: BLE001 - connection lost: keep trying, say so in the log
                if unreachable_since is None:
                    unreachable_since = time.monotonic()
                    mirror.feed(f"[gaudi-tui] the cluster does not answer ({exc}); retrying\n")
                time.sleep(POLL_S)
                continue
            state = str(info.status.value if hasattr(info.status, "value") else info.status)
            if state in ("SUCCEEDED", "FAILED", "STOPPED"):
                return info
            current = attempt.status()
            if state == "RUNNING" and current.state == "queued":
                attempt.save(state="running")
            if run.stop_requested() and not flagged:
                flagged = True
                attempt.save(state="stopping", stop_requested=True)
                try:
                    request_stop(spec.ray_address, spec.ray_python, record.submission_id)
                except Exception as exc:  # noqa: BLE001
                    mirror.feed(f"[gaudi-tui] could not raise the stop flag: {exc}\n")
            if (attempt.kill_requested.is_set() or not run.path.is_dir()) and not killed:
                killed = True
                attempt.kill_requested.set()
                attempt.save(state="stopping", kill_requested=True)
                jobs.stop_job(record.submission_id)
            if not tail.is_alive() and time.monotonic() - last_record > 5:
                mirror.feed_from(jobs.get_job_logs(record.submission_id))  # the stream broke: poll
            if time.monotonic() - last_record > 5:
                last_record = time.monotonic()
                if mirror.ranks != record.ranks:
                    record = replace(record, ranks=dict(mirror.ranks), ray_job_id=info.job_id)
                    write_record(run, record)
            time.sleep(POLL_S)

    def _finish(self, attempt: Attempt, jobs: Any, record: ClusterRecord, info: Any) -> None:
        run = attempt.run
        state = str(info.status.value if hasattr(info.status, "value") else info.status)
        end = last_end_event(run.metrics_path)
        code = info.driver_exit_code
        if attempt.kill_requested.is_set():
            left = verify_ended(record.address, info.job_id)
            error = "killed on the cluster" + (f"; still alive: {left}" if left else "")
            attempt.save(state="cancelled", ended=time.time(), exit_code=code, error=error)
        elif state == "SUCCEEDED" and end is not None and end.get("stopped"):
            attempt.save(state="cancelled", ended=time.time(), exit_code=code, error=None)
        elif state == "SUCCEEDED":
            attempt.save(state="succeeded", ended=time.time(), exit_code=code, error=None)
        elif state == "STOPPED":
            attempt.save(state="cancelled", ended=time.time(), exit_code=code, error="stopped on the cluster")
        else:
            attempt.save(state="failed", ended=time.time(), exit_code=code, error=failure(record, info, run))


def failure(record: ClusterRecord, info: Any, run: RunFolder) -> str:
    """Why a Ray job failed: a dead node of its ranks first, then the job's own error line.

    A worker's death can reach the job before the cluster has declared its node dead (health
    checks take seconds), so when the error reads like a lost worker the nodes are asked again
    for up to NODE_DEATH_WAIT_S.
    """
    own = error_from_log(run.log_path) or (str(info.message or "").strip().splitlines() or [""])[-1]
    mine = set(record.nodes())
    lost_worker = _LOST_WORKER.search(f"{own}\n{info.message or ''}") is not None
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


def _tail(jobs: Any, sid: str, mirror: LogMirror) -> None:
    async def follow() -> None:
        async for chunk in jobs.tail_job_logs(sid):
            mirror.feed(chunk)

    try:
        asyncio.run(follow())
    except Exception as exc:  # noqa: BLE001 - the supervisor falls back to polling get_job_logs
        print(f"log stream of {sid} ended: {exc}", file=sys.stderr, flush=True)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _truncate(path: Path, size: int) -> None:
    try:
        with path.open("r+b") as fh:
            fh.truncate(size)
    except OSError:
        pass
