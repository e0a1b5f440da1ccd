"""The Jobs SDK and the state API, each request bounded: a job's state, submit, stop, logs, the
stop flag, and what is left of a job after a kill.

`Jobs` wraps Ray's `JobSubmissionClient` so that every request has a timeout (the SDK sets none: a
frozen SSH tunnel would hang the caller for ever) and every failure is a `ClusterError` whose
message names the cause; `JobGone` when the cluster answers but does not know the job.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gaudi_tui.core.jobs import kinds, launch
from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs.kinds import ClusterEntry
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.targets.ray.nodes import ClusterError, get_json, normalize_address, request_timeout
from gaudi_tui.core.jobs.targets.ray.record import ClusterRecord, read_record

ENTRY_MODULE = "gaudi_tui.core.jobs.worker.ray_train"
"""The built-in job's entry point; it also raises the stop flag (`--set-stop`) for every kind."""
KILL_VERIFY_S = 60.0
"""After a stop, how long a kill waits for the job to end and for its actors to be gone."""
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
LIVE = ("PENDING", "RUNNING")
CARD_RESOURCES = ("HPU", "GPU")
"""Ray resources that are cards: a detached actor holding one is left behind by a kill."""


class JobGone(ClusterError):
    """The cluster answers but does not know the job: its head restarted, or it was deleted."""


class NoAnswer(ClusterError):
    """The cluster did not answer (refused, reset, timed out): whatever was asked may or may not
    have happened there."""


@dataclass(frozen=True)
class JobInfo:
    state: str
    job_id: str | None
    message: str
    driver_exit_code: int | None


class Jobs:
    """The Jobs API of the cluster at `address`, every request bounded by `request_timeout()`."""

    def __init__(self, address: str) -> None:
        self.address = normalize_address(address)
        self._sdk: Any = None

    def sdk(self) -> Any:
        if self._sdk is None:
            self._sdk = self._call("connect", lambda: _client(self.address))
        return self._sdk

    def info(self, sid: str) -> JobInfo:
        raw = self._call(f"read the state of {sid}", lambda: self.sdk().get_job_info(sid), sid)
        status = raw.status
        return JobInfo(
            state=str(status.value if hasattr(status, "value") else status),
            job_id=raw.job_id,
            message=str(raw.message or ""),
            driver_exit_code=raw.driver_exit_code,
        )

    def submit(
        self,
        sid: str,
        entrypoint: str,
        env: dict[str, str],
        metadata: dict[str, str],
        entry: ClusterEntry | None = None,
    ) -> None:
        """Submit once; a job already there under `sid` (submitted before a supervisor died) is fine.
        `entry`: what the entry process asks of its node, and the folder shipped with it."""
        runtime_env: dict[str, Any] = {"env_vars": env}
        resources: dict[str, Any] = {}
        if entry is not None:
            if entry.working_dir:
                runtime_env |= {"working_dir": entry.working_dir, "excludes": list(entry.excludes)}
            if entry.hpus:
                resources["entrypoint_resources"] = {"HPU": float(entry.hpus)}
            if entry.cpus:
                resources["entrypoint_num_cpus"] = float(entry.cpus)
        try:
            self._call(
                f"submit {sid}",
                lambda: self.sdk().submit_job(
                    entrypoint=entrypoint,
                    submission_id=sid,
                    runtime_env=runtime_env,
                    metadata=metadata,
                    **resources,
                ),
            )
        except ClusterError as exc:
            if "already exists" not in str(exc):
                raise

    def stop(self, sid: str) -> None:
        self._call(f"stop {sid}", lambda: self.sdk().stop_job(sid), sid)

    def logs(self, sid: str) -> str:
        return str(self._call(f"read the log of {sid}", lambda: self.sdk().get_job_logs(sid), sid))

    def _call(self, doing: str, request: Any, sid: str | None = None) -> Any:
        try:
            return request()
        except ClusterError:
            raise
        except Exception as exc:  # noqa: BLE001 - the SDK raises RuntimeError, requests' and aiohttp's errors
            text = " ".join(str(exc).split())
            if sid is not None and "404" in text and "does not exist" in text:
                raise JobGone(
                    f"Ray job {sid} is not known to the cluster at {self.address} (its head restarted, "
                    "or the job was deleted)"
                ) from None
            no_answer = _no_answer(exc)
            if no_answer:
                raise NoAnswer(f"cannot {doing} at {self.address}: {no_answer}") from None
            text = f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__
            raise ClusterError(f"cannot {doing} at {self.address}: {text}") from None


def _no_answer(exc: BaseException) -> str:
    """A timeout or a failed connection in words ('' for any other failure)."""
    import requests

    if isinstance(exc, requests.exceptions.Timeout):
        return f"the Ray dashboard did not answer in {request_timeout():g} s (a frozen tunnel?)"
    if isinstance(exc, (requests.exceptions.ConnectionError, ConnectionError, OSError)):
        return (
            f"cannot connect ({type(exc).__name__}): is the head running, and for a remote cluster is the "
            "dashboard port tunnelled (`ssh -L 8265:127.0.0.1:8265 HEAD`)?"
        )
    return ""


def _client(address: str) -> Any:
    """A `JobSubmissionClient` whose every request has a timeout (its constructor asks for the
    version, so that request is bounded too). Imports ray: only in the supervisor or a worker thread."""
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError:
        raise ClusterError(
            "Ray is not installed here: pip install 'gaudi-tui[cluster]' (ray[default])"
        ) from None

    class Bounded(JobSubmissionClient):
        def _do_request(self, method: str, endpoint: str, **kwargs: Any) -> Any:
            kwargs.setdefault("timeout", request_timeout())
            return super()._do_request(method, endpoint, **kwargs)

    return Bounded(address)


def entrypoint(spec: JobSpec, run: RunFolder, resume: Path | None) -> list[str]:
    """The job's entry point on the cluster: the kind's entry module (`Kind.cluster_entry`)."""
    module = kinds.for_spec(spec).cluster_entry(spec).module
    argv = [spec.ray_python, "-m", module, "--run-id", run.id, "--storage", spec.storage_path]
    if resume is not None:
        argv += ["--resume", str(resume)]
    return argv


def job_env(spec: JobSpec, run: RunFolder, stop_key: str) -> dict[str, str]:
    """Environment of the job on the cluster: a local job's (the spec's own and, on Gaudi, the
    runtime's metrics file in the run folder under storage_path), the spec itself, the stop key."""
    env = launch.job_env(RunFolder(Path(spec.storage_path).expanduser() / run.id), spec, {})
    env.update(
        {
            "GAUDI_TUI_SPEC": spec_mod.to_toml(spec),
            "GAUDI_TUI_STOP_KEY": stop_key,
            "RAY_DEDUP_LOGS": "0",  # rank lines and metrics must reach the log as printed
            "PYTHONUNBUFFERED": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
    )
    return env


def raise_stop_flag(jobs: Jobs, python: str, key: str) -> None:
    """Raise the graceful-stop flag of job `key` (a tiny job that writes Ray's KV store)."""
    argv = [python, "-m", ENTRY_MODULE, "--set-stop", key]
    jobs.submit(f"{key}-stop", shlex.join(argv), {}, {"gaudi_tui_stop": key})


def verify_ended(address: str, ray_job_id: str | None, timeout: float = KILL_VERIFY_S) -> str:
    """Wait until no actor of the job is alive on any node: '' when so, else what still runs or why
    it could not be told (the state API failed).

    Detached actors are not the job's to end: they outlive it by design (`ray job stop` never ends
    them), e.g. the cluster-wide `AutoscalingCoordinator` that Ray Train starts with the first
    training job on a cluster. Counted, they held every kill of that job for the whole timeout and
    named them as left behind. One that holds cards is still named: the cards stay taken."""
    if not ray_job_id:
        return ""
    deadline = time.monotonic() + timeout
    left = ""
    while time.monotonic() < deadline:
        try:
            reply = get_json(
                address,
                "/api/v0/actors?limit=1000&detail=1&filter_keys=job_id&filter_predicates=%3D"
                f"&filter_values={ray_job_id}",
            )
            rows = reply["data"]["result"]["result"]
        except ClusterError as exc:
            return f"not verified that nothing is left ({exc})"
        except (KeyError, TypeError) as exc:
            return f"not verified that nothing is left (the state API answered without {exc})"
        alive = [r for r in rows if isinstance(r, dict) and _left_behind(r)]
        if not alive:
            return ""
        left = "still alive: " + ", ".join(
            f"{r.get('class_name')} on {r.get('node_id', '')[:8]}" for r in alive[:5]
        )
        time.sleep(1.0)
    return left


def _left_behind(actor: dict) -> bool:
    """An actor row of the state API (detail=1) the kill should have ended: alive, and either the
    job's own or a detached one holding cards (HPU or GPU in its required resources)."""
    if actor.get("state") == "DEAD":
        return False
    if not actor.get("is_detached"):
        return True
    needs = actor.get("required_resources")
    if not isinstance(needs, dict):
        return False
    return any(isinstance(needs.get(card), (int, float)) and needs[card] > 0 for card in CARD_RESOURCES)


def session_name(address: str) -> str:
    """Which cluster answers at `address`: its dashboard's session name (`/api/version`), new with
    every start of a head ('' from a Ray that does not say). ClusterError when it does not answer."""
    reply = get_json(address, "/api/version")
    name = reply.get("session_name") if isinstance(reply, dict) else None
    return name if isinstance(name, str) else ""


def other_cluster(record: ClusterRecord) -> str | None:
    """Why the cluster answering at the record's address is not the one the job was submitted to
    (its "does not exist" then says nothing of the job), or None when it is, or cannot be told from
    the record. ClusterError when the dashboard does not answer."""
    if not record.session:
        return None
    now = session_name(record.address)
    if not now or now == record.session:
        return None
    return (
        f"{record.address} now answers for another Ray cluster (session {now}; Ray job "
        f"{record.submission_id} was submitted to session {record.session}): a restarted head, or the "
        "tunnel reaches another cluster. If the job's cluster still runs, reach it at this address "
        f"to follow or end the job, or stop it there (`ray job stop {record.submission_id}`)"
    )


def job_state_at(address: str, sid: str) -> str | None:
    """The state of `sid` on the cluster at `address`, None when it cannot be told."""
    try:
        return Jobs(address).info(sid).state
    except ClusterError:
        return None


def job_state(run: RunFolder) -> str | None:
    """The Ray job state of the run's latest attempt (PENDING, RUNNING, …), or None if unknown."""
    record = read_record(run)
    return job_state_at(record.address, record.submission_id) if record else None


def kill_orphan(run: RunFolder, deadline_s: float = KILL_VERIFY_S) -> str:
    """`k` on a Ray job whose supervisor is gone: stop it on the cluster, wait for it to end and
    verify nothing is left (bounded by `deadline_s`); what was done. ClusterError when the cluster
    cannot be reached: nothing is recorded then, since the job may still run."""
    record = read_record(run)
    if record is None:
        return "killed before it reached the cluster (no supervisor)"
    jobs = Jobs(record.address)
    try:
        jobs.stop(record.submission_id)
    except JobGone as exc:
        if (other := other_cluster(record)) is not None:  # the user's k: the end is recorded, with why
            return f"recorded as ended, not verified: {other}"
        return f"nothing to kill on the cluster: {exc}"
    except ClusterError as exc:
        raise ClusterError(
            f"{exc}. Nothing was recorded, since the job may still run: k again once it answers"
        ) from None
    deadline = time.monotonic() + deadline_s
    info = jobs.info(record.submission_id)
    while info.state not in TERMINAL and time.monotonic() < deadline:
        time.sleep(1.0)
        info = jobs.info(record.submission_id)
    if info.state not in TERMINAL:
        raise ClusterError(
            f"stop sent to Ray job {record.submission_id}, but it is still {info.state} after {deadline_s:g} s; "
            "nothing was recorded, since it still runs: k again, or `ray job stop` on the head"
        )
    left = verify_ended(record.address, info.job_id, max(1.0, deadline - time.monotonic()))
    return "killed on the cluster (no supervisor)" + (f"; {left}" if left else "")
