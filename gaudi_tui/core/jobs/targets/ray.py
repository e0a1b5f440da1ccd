"""Ray target: submit a job to a Ray cluster through the Jobs SDK and mirror it into the run folder.

Everything goes through the dashboard's HTTP port (the one an SSH tunnel forwards), so no shared
filesystem between the panel and the cluster is assumed for watching a job:
- nodes and free resources: the dashboard's REST API (`/api/v0/nodes`, `/api/cluster_status`);
- the job: `JobSubmissionClient` (submit, status, log stream, stop);
- metrics: rank 0 prints them as prefixed lines (`worker/callbacks.LogStreamSink`); the mirror
  here splits the log stream into `metrics.jsonl` and `stdout.log`;
- graceful stop: a tiny second job writes a flag into Ray's internal KV store, which rank 0 of the
  training job polls (Ray's own `stop_job` gives a job 3 s before SIGKILL: too short to save).
`cluster.json` records where the job runs: address, submission id, Ray job id, nodes of the ranks.
Checkpoints go to `storage_path` on the cluster (a folder every node reaches).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shlex
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from gaudi_tui.core import paths
from gaudi_tui.core.devices.cardsets import SUPPORTED_SETS
from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs.outcome import error_from_log, last_end_event
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import write_atomic
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.validate import Problem
from gaudi_tui.core.jobs.worker.ray_train import METRIC_PREFIX, RANK_PREFIX

ENTRY_MODULE = "gaudi_tui.core.jobs.worker.ray_train"
HTTP_TIMEOUT_S = 10.0
POLL_S = 1.0
KILL_VERIFY_S = 60.0
NODE_DEATH_WAIT_S = 30.0
SUBMIT_RETRY_S = 60.0
_LOST_WORKER = re.compile(
    r"ActorDied|ActorUnavailable|RayActorError|WorkerGroup|node .*(died|dead|lost)|unexpected system error",
    re.IGNORECASE,
)
HOST_CARDS = 8
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class ClusterError(RuntimeError):
    """The cluster cannot be reached or answered something unusable; the message says what to do."""


# --- the cluster: nodes and free resources -------------------------------------------------------


@dataclass(frozen=True)
class Node:
    node_id: str
    ip: str
    alive: bool
    head: bool
    hpu_total: float = 0.0
    hpu_free: float = 0.0
    cpu_total: float = 0.0
    cpu_free: float = 0.0
    memory_total: float = 0.0
    memory_free: float = 0.0
    message: str = ""

    @property
    def label(self) -> str:
        return f"{self.ip} ({self.node_id[:8]})"


def normalize_address(address: str) -> str:
    """A dashboard URL from what a user types: `host:8265` gains `http://`; no trailing slash."""
    text = address.strip().rstrip("/")
    if text and "://" not in text:
        text = "http://" + text
    return text


def _get_json(address: str, path: str) -> Any:
    url = normalize_address(address) + path
    try:
        with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S) as reply:  # noqa: S310 - http(s) URL
            return json.loads(reply.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ClusterError(
            f"cannot reach the Ray cluster at {normalize_address(address)} ({reason}): is its head "
            "running with the dashboard (`ray start --head --dashboard-host 127.0.0.1`), and for a "
            "remote cluster is the dashboard port tunnelled (`ssh -L 8265:127.0.0.1:8265 HEAD`)?"
        ) from None


def list_nodes(address: str) -> list[Node]:
    """Every node the cluster knows (dead ones too), with total and free HPUs, CPUs and memory."""
    listing = _get_json(address, "/api/v0/nodes?detail=1&limit=1000")
    try:
        rows = listing["data"]["result"]["result"]
        status = _get_json(address, "/api/cluster_status")
        usage = status["data"]["clusterStatus"]["loadMetricsReport"]["usageByNode"] or {}
    except (KeyError, TypeError) as exc:
        raise ClusterError(f"{address} answered, but not like a Ray dashboard ({exc})") from None
    nodes = []
    for row in rows:
        node_id = str(row.get("node_id", ""))
        total = row.get("resources_total") or {}
        used = usage.get(node_id, {})

        def free(name: str, total: Mapping[str, float] = total, used: Mapping[str, Any] = used) -> float:
            pair = used.get(name)
            return float(pair[1] - pair[0]) if pair else float(total.get(name, 0.0))

        alive = row.get("state") == "ALIVE"
        nodes.append(
            Node(
                node_id=node_id,
                ip=str(row.get("node_ip", "")),
                alive=alive,
                head=bool(row.get("is_head_node")),
                hpu_total=float(total.get("HPU", 0.0)),
                hpu_free=free("HPU") if alive else 0.0,
                cpu_total=float(total.get("CPU", 0.0)),
                cpu_free=free("CPU") if alive else 0.0,
                memory_total=float(total.get("memory", 0.0)),
                memory_free=free("memory") if alive else 0.0,
                message=str(row.get("state_message") or ""),
            )
        )
    return sorted(nodes, key=lambda n: (not n.head, not n.alive, n.ip, n.node_id))


def format_nodes(nodes: list[Node]) -> str:
    """A small table: one line per node (HPU and CPU as free/total, memory in GiB)."""
    lines = [f"{'node':<26} {'state':<6} {'HPU':>9} {'CPU':>9} {'mem GiB':>13}"]
    for n in nodes:
        role = " head" if n.head else ""
        lines.append(
            f"{n.label + role:<26} {'alive' if n.alive else 'DEAD':<6} "
            f"{n.hpu_free:>4g}/{n.hpu_total:<4g} {n.cpu_free:>4g}/{n.cpu_total:<4g} "
            f"{n.memory_free / 2**30:>6.1f}/{n.memory_total / 2**30:<6.1f}"
            + (f"  {n.message}" if n.message and not n.alive else "")
        )
    return "\n".join(lines)


# --- before anything starts: prepare and check ---------------------------------------------------


def prepare(spec: JobSpec, nodes: list[Node] | None = None) -> JobSpec:
    """The spec as it will run on the cluster: address, device, storage and Python resolved."""
    address = normalize_address(spec.ray_address or spec_mod.default_ray_address())
    device = spec.device
    if device == "auto":
        device = "hpu" if any(n.alive and n.hpu_total > 0 for n in nodes or ()) else "cpu"
    return replace(
        spec,
        ray_address=address,
        device=device,
        storage_path=spec.storage_path or str(paths.runs_dir()),
        ray_python=spec.ray_python or sys.executable,
        processes=spec.workers,
        cards=(),
    )


def check(spec: JobSpec) -> tuple[JobSpec, list[Problem]]:
    """Prepare the spec against the live cluster and list every reason it cannot run there."""
    if not (spec.ray_address or spec_mod.default_ray_address()):
        return spec, [
            Problem(
                "ray_address",
                "no cluster given: set ray_address to the Ray dashboard URL (e.g. "
                "http://127.0.0.1:8265) or export RAY_ADDRESS",
            )
        ]
    try:
        nodes = list_nodes(spec.ray_address or spec_mod.default_ray_address())
    except ClusterError as exc:
        return prepare(spec), [Problem("ray_address", str(exc))]
    prepared = prepare(spec, nodes)
    return prepared, layout_problems(prepared, nodes)


def layout_problems(spec: JobSpec, nodes: list[Node]) -> list[Problem]:
    """Worker layout against the cluster's free resources and Intel's card rules."""
    out: list[Problem] = []
    alive = [n for n in nodes if n.alive]
    if not 1 <= spec.workers <= 512:
        return [Problem("workers", f"{spec.workers} is not between 1 and 512")]
    if spec.max_failures < 0:
        out.append(Problem("max_failures", f"{spec.max_failures} is negative; 0 means no automatic restart"))
    if spec.device not in ("hpu", "cpu"):
        return [*out, Problem("device", f"Ray jobs run on hpu or cpu, not {spec.device}")]
    if spec.device == "cpu":
        free = sum(n.cpu_free for n in alive)
        if free < spec.workers:
            out.append(
                Problem(
                    "workers", f"{spec.workers} workers need {spec.workers} free CPUs; {_free(alive, 'cpu')}"
                )
            )
        return out
    return out + _hpu_layout(spec, alive)


def _hpu_layout(spec: JobSpec, alive: list[Node]) -> list[Problem]:
    per, total = spec.hpus_per_worker, spec.workers * spec.hpus_per_worker
    sizes = sorted({len(s) for s in SUPPORTED_SETS} | {1})
    if not any(n.hpu_total > 0 for n in alive):
        return [
            Problem(
                "device",
                "the cluster has no HPUs (Ray counts them only through habana_frameworks): use device=cpu or auto",
            )
        ]
    if per not in sizes:
        return [
            Problem("hpus_per_worker", f"{per} cards per worker: use one of {', '.join(map(str, sizes))}")
        ]
    if total <= HOST_CARDS:
        if total not in sizes:
            return [
                Problem(
                    "workers",
                    f"{spec.workers} workers × {per} cards = {total} cards: within one host a job uses "
                    f"1, 2, 4 or 8 cards (Intel's supported sets)",
                )
            ]
        if not any(n.hpu_free >= total for n in alive):
            return [Problem("workers", f"{total} HPUs on one host needed; {_free(alive, 'hpu')}")]
        return []
    if total % HOST_CARDS or HOST_CARDS % per:
        return [
            Problem(
                "workers",
                f"{spec.workers} workers × {per} cards = {total} cards: a multi-host job uses whole hosts "
                f"of {HOST_CARDS} cards (16, 24, 32 … cards)",
            )
        ]
    hosts = total // HOST_CARDS
    whole = [n for n in alive if n.hpu_total == HOST_CARDS and n.hpu_free >= HOST_CARDS]
    if len(whole) < hosts:
        return [
            Problem(
                "workers",
                f"{total} HPUs need {hosts} whole hosts with all {HOST_CARDS} cards free, "
                f"found {len(whole)}; {_free(alive, 'hpu')}",
            )
        ]
    return []


def _free(nodes: list[Node], kind: str) -> str:
    if not nodes:
        return "the cluster has no live node"
    parts = [f"{n.label} {getattr(n, kind + '_free'):g}/{getattr(n, kind + '_total'):g}" for n in nodes]
    return f"free {kind.upper()}s per node: " + ", ".join(parts)


# --- where a job runs: cluster.json --------------------------------------------------------------


@dataclass(frozen=True)
class ClusterRecord:
    address: str
    submission_id: str
    attempt: int
    log_base: int = 0
    """Size of stdout.log before this attempt: a re-attach cuts back to it and mirrors afresh."""
    metrics_base: int = 0
    ray_job_id: str | None = None
    entrypoint: str = ""
    ranks: dict[str, dict[str, str]] = field(default_factory=dict)
    """rank → {"node_id", "node_ip"} as each rank reported itself."""
    nodes_seen: list[dict[str, Any]] = field(default_factory=list)
    """The cluster's nodes when the attempt ended (shown when the cluster is gone)."""

    def nodes(self) -> list[str]:
        return sorted({v.get("node_id", "") for v in self.ranks.values()})


def cluster_path(run: RunFolder) -> Path:
    return run.path / "cluster.json"


def read_record(run: RunFolder) -> ClusterRecord | None:
    try:
        data = json.loads(cluster_path(run).read_text(encoding="utf-8"))
        return ClusterRecord(**{k: v for k, v in data.items() if k in ClusterRecord.__dataclass_fields__})
    except (OSError, ValueError, TypeError):
        return None


def write_record(run: RunFolder, record: ClusterRecord) -> None:
    write_atomic(cluster_path(run), json.dumps(asdict(record), indent=1))


def submission_id(run: RunFolder, attempt: int) -> str:
    return f"gaudi-tui-{run.id}-a{attempt}"


# --- the supervisor's side -----------------------------------------------------------------------


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


class LogMirror:
    """Splits the job's log stream: metrics lines → metrics.jsonl, rank lines → cluster.json,
    the rest → stdout.log (without colour codes). Exact repeats of a metrics line are dropped
    (Ray can forward a line twice when nodes share a host's log folder)."""

    def __init__(self, run: RunFolder, record: ClusterRecord) -> None:
        self.run = run
        self.record = record
        self.consumed = 0
        self.partial = ""
        self.lock = threading.Lock()
        self.seen: deque[str] = deque(maxlen=4096)
        self.seen_set: set[str] = set()
        self.ranks: dict[str, dict[str, str]] = dict(record.ranks)

    def feed(self, text: str) -> None:
        with self.lock:
            self.consumed += len(text)
            data = self.partial + text
            *lines, self.partial = data.split("\n")
            self._write(lines)

    def feed_from(self, full: str) -> None:
        """Feed whatever of the whole log (`get_job_logs`) the stream has not delivered yet."""
        with self.lock:
            missing = full[self.consumed :]
        if missing:
            self.feed(missing)

    def flush_partial(self) -> None:
        with self.lock:
            if self.partial:
                self._write([self.partial])
                self.partial = ""

    def _write(self, lines: list[str]) -> None:
        plain: list[str] = []
        metrics: list[str] = []
        for raw in lines:
            line = _ANSI.sub("", raw).rstrip("\r")
            if METRIC_PREFIX in line:
                payload = line.split(METRIC_PREFIX, 1)[1].strip()
                digest = hashlib.blake2b(payload.encode(), digest_size=12).hexdigest()
                if digest not in self.seen_set and _is_object(payload):
                    if len(self.seen) == self.seen.maxlen:
                        self.seen_set.discard(self.seen[0])
                    self.seen.append(digest)
                    self.seen_set.add(digest)
                    metrics.append(payload)
            elif RANK_PREFIX in line:
                self._rank(line.split(RANK_PREFIX, 1)[1])
            else:
                plain.append(line)
        if plain:
            with self.run.log_path.open("a", encoding="utf-8") as fh:
                fh.write("".join(p + "\n" for p in plain))
        if metrics:
            with self.run.metrics_path.open("a", encoding="utf-8") as fh:
                fh.write("".join(m + "\n" for m in metrics))

    def _rank(self, payload: str) -> None:
        try:
            info = json.loads(payload)
            self.ranks[str(int(info["rank"]))] = {
                "node_id": str(info.get("node_id", "")),
                "node_ip": str(info.get("node_ip", "")),
            }
        except (ValueError, KeyError, TypeError):
            return


def _is_object(payload: str) -> bool:
    try:
        return isinstance(json.loads(payload), dict)
    except ValueError:
        return False


class RayTarget:
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
            nodes_seen=[asdict(n) for n in _nodes_or_none(record.address)],
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


def _nodes_or_none(address: str) -> list[Node]:
    """The nodes, or none when the cluster does not answer (said in the supervisor's log)."""
    try:
        return list_nodes(address)
    except ClusterError as exc:
        print(f"cannot list the cluster's nodes: {exc}", file=sys.stderr, flush=True)
        return []


def nodes_text(record: ClusterRecord) -> str:
    """The cluster's nodes now, or as last seen when the cluster cannot be reached."""
    try:
        return format_nodes(list_nodes(record.address))
    except ClusterError as exc:
        if not record.nodes_seen:
            return f"nodes: {exc}"
        seen = [Node(**n) for n in record.nodes_seen]
        return f"nodes when the job ended (the cluster does not answer now):\n{format_nodes(seen)}"


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
        dead = [n for n in _nodes_or_none(record.address) if not n.alive and n.node_id in mine]
        if dead or time.monotonic() >= deadline:
            break
        time.sleep(1.0)
    if dead:
        names = ", ".join(n.label for n in dead)
        return f"node {names} died mid-job (resumable from the newest complete checkpoint): {own}"[:600]
    return own[:600] or f"the Ray job failed (exit {info.driver_exit_code})"


def verify_ended(address: str, ray_job_id: str | None, timeout: float = KILL_VERIFY_S) -> str:
    """Wait until no actor of the job is alive on any node; '' when so, else what still runs."""
    if not ray_job_id:
        return ""
    deadline = time.monotonic() + timeout
    left = ""
    while time.monotonic() < deadline:
        try:
            reply = _get_json(
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


# --- what the panel does without a supervisor ----------------------------------------------------


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


def kill_orphan(run: RunFolder) -> None:
    """`k` on a Ray job whose supervisor is gone: stop it on the cluster, verify, record."""
    record = read_record(run)
    status = run.status()
    if record is None or status is None:
        return
    jobs = client(record.address)
    jobs.stop_job(record.submission_id)
    deadline = time.monotonic() + KILL_VERIFY_S
    info = jobs.get_job_info(record.submission_id)
    while not info.status.is_terminal() and time.monotonic() < deadline:
        time.sleep(1.0)
        info = jobs.get_job_info(record.submission_id)
    left = verify_ended(record.address, info.job_id)
    run.write_status(
        status.with_(
            state="cancelled",
            kill_requested=True,
            ended=time.time(),
            error="killed on the cluster (no supervisor)" + (f"; still alive: {left}" if left else ""),
        )
    )
