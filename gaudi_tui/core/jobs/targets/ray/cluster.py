"""The Jobs SDK and the state API: a client, a job's state, the stop flag, what is left of a job."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.targets.ray.nodes import ClusterError, get_json, normalize_address
from gaudi_tui.core.jobs.targets.ray.record import read_record

ENTRY_MODULE = "gaudi_tui.core.jobs.worker.ray_train"
KILL_VERIFY_S = 60.0


def client(address: str) -> Any:
    """A Jobs SDK client (imports ray: only in the supervisor or a worker thread)."""
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError:
        raise ClusterError(
            "Ray is not installed here: pip install 'gaudi-tui[cluster]' (ray[default])"
        ) from None
    try:
        return JobSubmissionClient(normalize_address(address))
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ClusterError(f"cannot reach the Ray Jobs API at {address}: {exc}") from None


def entrypoint(spec: JobSpec, run: RunFolder, resume: Path | None) -> list[str]:
    argv = [spec.ray_python, "-m", ENTRY_MODULE, "--run-id", run.id, "--storage", spec.storage_path]
    if resume is not None:
        argv += ["--resume", str(resume)]
    return argv


def job_env(spec: JobSpec, stop_key: str) -> dict[str, str]:
    """Environment of the job on the cluster: the spec's own, the spec itself, the stop flag's key."""
    env = dict(spec.env)
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


def request_stop(address: str, python: str, key: str) -> str:
    """Raise the graceful-stop flag of job `key` (a tiny job that writes Ray's KV store)."""
    argv = [python, "-m", ENTRY_MODULE, "--set-stop", key]
    return str(client(address).submit_job(entrypoint=shlex.join(argv), submission_id=f"{key}-stop"))


def verify_ended(address: str, ray_job_id: str | None, timeout: float = KILL_VERIFY_S) -> str:
    """Wait until no actor of the job is alive on any node; '' when so, else what still runs."""
    if not ray_job_id:
        return ""
    deadline = time.monotonic() + timeout
    left = ""
    while time.monotonic() < deadline:
        try:
            reply = get_json(
                address,
                f"/api/v0/actors?limit=1000&filter_keys=job_id&filter_predicates=%3D&filter_values={ray_job_id}",
            )
            rows = reply["data"]["result"]["result"]
        except (ClusterError, KeyError, TypeError):
            return ""
        alive = [r for r in rows if r.get("state") not in ("DEAD",)]
        if not alive:
            return ""
        left = ", ".join(f"{r.get('class_name')} on {r.get('node_id', '')[:8]}" for r in alive[:5])
        time.sleep(1.0)
    return left


def job_state(run: RunFolder) -> str | None:
    """The Ray job state of the run's latest attempt (PENDING, RUNNING, …), or None if unknown."""
    record = read_record(run)
    if record is None:
        return None
    try:
        status = client(record.address).get_job_status(record.submission_id)
    except Exception:  # noqa: BLE001 - unknown id, cluster gone
        return None
    return str(status.value if hasattr(status, "value") else status)


def kill_orphan(run: RunFolder) -> str:
    """`k` on a Ray job whose supervisor is gone: stop it on the cluster, verify; what was done."""
    record = read_record(run)
    if record is None:
        return "killed before it reached the cluster (no supervisor)"
    jobs = client(record.address)
    jobs.stop_job(record.submission_id)
    deadline = time.monotonic() + KILL_VERIFY_S
    info = jobs.get_job_info(record.submission_id)
    while not info.status.is_terminal() and time.monotonic() < deadline:
        time.sleep(1.0)
        info = jobs.get_job_info(record.submission_id)
    left = verify_ended(record.address, info.job_id)
    return "killed on the cluster (no supervisor)" + (f"; still alive: {left}" if left else "")
