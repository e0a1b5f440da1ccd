"""Jobs and nodes as Slurm 22.05 reports them, read from `squeue --json`, `sinfo --json`,
`scontrol show job -o` and `sacct -P`.

Shapes this follows (real 22.05.8 outputs, tests/data/slurm/): `job_state` is a plain string;
`exit_code` is the raw wait status (768 = exit 3, 15 = killed by SIGTERM); `time_limit` is minutes,
null or 525600 for UNLIMITED; `gres_detail` holds one `gpu:gaudi2:3(IDX:4-6)` per allocated node in
the order of the expanded node list, and is empty once a job ended; `standard_output` is the
unexpanded pattern ('' when -o was not given). Node `state` is lowercase, drains and non-response
are `state_flags`; `gres_used` on an idle node is `gpu:gaudi2:0(IDX:N/A)`. Newer Slurm (23.02+)
turns `job_state` into a list and `exit_code` into an object: both are read too.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gaudi_tui.core.slurm.gres import CARD_NAMES, Gres, card_indices, cards_of, entries, parse_gres
from gaudi_tui.core.slurm.hostlist import expand, expanded
from gaudi_tui.core.untrusted.data import INT_MAX, INT_MIN, integer, number

log = logging.getLogger(__name__)

UNLIMITED_MIN = 525600
ACTIVE = frozenset({"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "PREEMPTED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT"})  # fmt: skip
"""States in which some process of the job may still run or run again (a requeue)."""
ENDED = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "REVOKED"})  # fmt: skip


# --- jobs -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueJob:
    job_id: int
    name: str
    user: str
    state: str
    reason: str
    partition: str
    nodes: tuple[str, ...]
    node_count: int
    cards_per_node: int
    gres_name: str | None
    submit_time: int
    start_time: int
    end_time: int
    time_limit_min: int | None
    """None = no limit (UNLIMITED)."""
    restarts: int = 0
    exit_status: int | None = None
    """The script's exit code (wait status >> 8), None when killed by a signal."""
    exit_signal: int | None = None
    array_job_id: int = 0
    array_task: str = ""
    """`3` for one task, `2-3%2` for a pending array record, '' when not an array."""
    stdout_pattern: str = ""
    workdir: str = ""
    batch_host: str = ""
    command: str = ""
    cards_by_node: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """The card indices Slurm allocated on each node (running jobs with gpu GRES only)."""
    dependency: str = ""

    @property
    def label(self) -> str:
        """`12` or `12_3` (an array task) or `12_[2-3%2]` (a pending array record)."""
        if not self.array_task or not self.array_job_id:
            return str(self.job_id)
        task = self.array_task if self.array_task.isdigit() else f"[{self.array_task}]"
        return f"{self.array_job_id}_{task}"

    @property
    def active(self) -> bool:
        return self.state not in ENDED

    @property
    def cards(self) -> int:
        return self.cards_per_node * max(1, self.node_count)

    def elapsed(self, now: float | None = None) -> float | None:
        if not self.start_time or self.state == "PENDING":
            return None
        end = self.end_time if not self.active and self.end_time else (now or time.time())
        return max(0.0, end - self.start_time)

    def time_left(self, now: float | None = None) -> float | None:
        """Seconds until the limit of a running job; None without a limit or when not running."""
        if self.time_limit_min is None or self.state != "RUNNING" or not self.start_time:
            return None
        return max(0.0, self.start_time + self.time_limit_min * 60 - (now or time.time()))

    def stdout_path(self) -> str:
        """The output file, the pattern expanded as Slurm does for a batch job (`%j %x %u %A %a %N
        %n %s %t %%`); `scontrol show job` gives it expanded and wins where it is known."""
        pattern = self.stdout_pattern or (
            "slurm-%A_%a.out" if self.array_task.isdigit() and self.array_job_id else "slurm-%j.out"
        )
        if not pattern.startswith("/") and self.workdir:
            pattern = f"{self.workdir.rstrip('/')}/{pattern}"
        values = {
            "j": str(self.job_id), "x": self.name, "u": self.user, "A": str(self.array_job_id or self.job_id),
            "a": self.array_task if self.array_task.isdigit() else "4294967294", "N": self.batch_host or (self.nodes[0] if self.nodes else ""),
            "n": "0", "s": "batch", "t": "0", "%": "%",
        }  # fmt: skip
        return re.sub(
            r"%(\d*)([jxuAaNnst%])", lambda m: values[m.group(2)].zfill(int(m.group(1) or 0)), pattern
        )


def _state(value: Any) -> str:
    if isinstance(value, list):  # 23.02+: ["RUNNING", "COMPLETING"]
        return str(value[0]) if value else "UNKNOWN"
    return str(value or "UNKNOWN")


def _exit(value: Any) -> tuple[int | None, int | None]:
    if isinstance(value, dict):  # 23.02+: {"status": ..., "return_code": ..., "signal": {...}}
        signal = value.get("signal")
        signal = signal.get("signal_id") if isinstance(signal, dict) else None
        code = value.get("return_code")
        return (int(code) if isinstance(code, int) else None), (
            int(signal) if isinstance(signal, int) and signal else None
        )
    if not isinstance(value, int):
        return None, None
    if value & 0x7F:
        return None, value & 0x7F
    return value >> 8, None


def _number(value: Any) -> int:
    """A count or a time as squeue gives it (untrusted.data.number: finite, within 64 bits; else 0)."""
    if isinstance(value, dict):  # 23.02+: {"set": true, "infinite": false, "number": N}
        if not value.get("set", True):
            return 0
        value = value.get("number")
    whole = number(value, lo=INT_MIN, hi=INT_MAX)
    return int(whole) if whole is not None else 0


def job_from_json(row: Mapping[str, Any]) -> QueueJob | None:
    """The job of one row of `squeue --json`; None (logged) for a row without a whole-number
    `job_id`: no other job is lost with it, and no job is shown under an id it does not have."""
    job_id = integer(row.get("job_id"), lo=0)
    if job_id is None:
        log.warning("squeue: a job without a whole-number job_id was left out")
        return None
    nodes = expanded(str(row.get("nodes") or ""))
    cards = [g for g in entries(str(row.get("tres_per_node") or "")) if g.name in CARD_NAMES]
    limit_raw = row.get("time_limit")
    limit = _number(limit_raw) if limit_raw is not None else None
    if limit is not None and (limit >= UNLIMITED_MIN or limit <= 0):
        limit = None
    detail = row.get("gres_detail") or []
    by_node = {node: card_indices(str(d)) for node, d in zip(nodes, detail, strict=False)}
    status, signal = _exit(row.get("exit_code"))
    task = row.get("array_task_id")
    task_text = str(row.get("array_task_string") or "") or (str(_number(task)) if task is not None else "")
    return QueueJob(
        job_id=job_id,
        name=str(row.get("name") or ""),
        user=str(row.get("user_name") or row.get("user_id") or ""),
        state=_state(row.get("job_state")),
        reason=str(row.get("state_reason") or "None"),
        partition=str(row.get("partition") or ""),
        nodes=nodes,
        node_count=_number(row.get("node_count")) or len(nodes) or 1,
        cards_per_node=sum(g.count for g in cards),
        gres_name=cards[0].name if cards else None,
        submit_time=_number(row.get("submit_time")),
        start_time=_number(row.get("start_time")),
        end_time=_number(row.get("end_time")),
        time_limit_min=limit,
        restarts=_number(row.get("restart_cnt")),
        exit_status=status,
        exit_signal=signal,
        array_job_id=_number(row.get("array_job_id")),
        array_task=task_text,
        stdout_pattern=str(row.get("standard_output") or ""),
        workdir=str(row.get("current_working_directory") or ""),
        batch_host=str(row.get("batch_host") or ""),
        command=str(row.get("command") or ""),
        cards_by_node=by_node,
        dependency=str(row.get("dependency") or ""),
    )


READ = (
    "job_id", "name", "user_name", "user_id", "job_state", "state_reason", "partition", "nodes", "node_count",
    "tres_per_node", "submit_time", "start_time", "end_time", "time_limit", "restart_cnt", "exit_code",
    "array_job_id", "array_task_id", "array_task_string", "standard_output", "current_working_directory",
    "batch_host", "command", "gres_detail", "dependency",
)  # fmt: skip
"""Every key `job_from_json` reads: a job whose values are all unchanged is not parsed again."""
_PARSED: dict[tuple[Any, ...], QueueJob] = {}


def _key(row: Mapping[str, Any]) -> tuple[Any, ...] | None:
    values = tuple(tuple(v) if isinstance(v, list) else v for v in map(row.get, READ))
    try:
        hash(values)
    except TypeError:  # newer Slurm's nested objects: parse every time
        return None
    return values


def jobs_from_json(data: Mapping[str, Any]) -> list[QueueJob]:
    """Every job of a `squeue --json` document. A refresh re-parses only the jobs that changed
    (with 1,000 jobs a full parse costs as much as reading the JSON)."""
    out = []
    seen: dict[tuple[Any, ...], QueueJob] = {}
    for row in data.get("jobs") or []:
        if not isinstance(row, Mapping):
            continue
        key = _key(row)
        job = _PARSED.get(key) if key is not None else None
        if job is None:
            job = job_from_json(row)
        if job is None:
            continue
        if key is not None:
            seen[key] = job
        out.append(job)
    _PARSED.clear()  # keep only what this refresh saw
    _PARSED.update(seen)
    return out


# --- nodes ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlurmNode:
    name: str
    state: str
    """idle, mixed, allocated, down, ... (lowercase, as sinfo says it)."""
    flags: tuple[str, ...]
    reason: str
    partitions: tuple[str, ...]
    gres: tuple[Gres, ...]
    cards_total: int
    cards_used: int
    cpus: int = 0
    cpus_used: int = 0

    @property
    def usable(self) -> bool:
        """Takes new jobs: not down, drained, draining or not responding."""
        bad = {"DRAIN", "DRAINED", "DRAINING", "NOT_RESPONDING", "FAIL", "MAINTENANCE", "REBOOT_REQUESTED"}
        return self.state not in ("down", "drained", "fail", "future", "unknown") and not bad & set(
            self.flags
        )

    @property
    def cards_free(self) -> int:
        return max(0, self.cards_total - self.cards_used) if self.usable else 0

    @property
    def state_words(self) -> str:
        """`mixed`, `mixed, draining`, `down, not responding`."""
        extra = [f.lower().replace("_", " ") for f in self.flags]
        if "DRAIN" in self.flags:
            extra = ["drained" if self.state == "idle" else "draining" if f == "drain" else f for f in extra]
        return ", ".join([self.state, *extra])

    def gres_types(self) -> tuple[tuple[str, str | None], ...]:
        return tuple((g.name, g.type) for g in self.gres)


def node_from_json(row: Mapping[str, Any]) -> SlurmNode:
    gres = tuple(parse_gres(str(row.get("gres") or "")))
    used = parse_gres(str(row.get("gres_used") or ""))
    state = _state(row.get("state")).lower()
    flags = tuple(str(f) for f in row.get("state_flags") or [])
    if isinstance(row.get("state"), list):  # 23.02+: ["MIXED", "DRAIN"]
        flags = tuple(str(f) for f in row["state"][1:])
    return SlurmNode(
        name=str(row.get("name") or ""),
        state=state,
        flags=flags,
        reason=str(row.get("reason") or ""),
        partitions=tuple(str(p) for p in row.get("partitions") or []),
        gres=gres,
        cards_total=cards_of(gres),
        cards_used=cards_of(used),
        cpus=_number(row.get("cpus")),
        cpus_used=_number(row.get("alloc_cpus")),
    )


def nodes_from_json(data: Mapping[str, Any]) -> list[SlurmNode]:
    return [node_from_json(row) for row in data.get("nodes") or [] if isinstance(row, Mapping)]


# --- scontrol show ... -o and sacct -P ---------------------------------------------------------------

_KEY = re.compile(r"(?:^|\s)([A-Z][A-Za-z0-9_/:]*)=")
_NOT_KEYS_AFTER = ("Command",)
"""Values that may hold spaces and `x=y` words of their own (a script's arguments)."""
_AFTER_COMMAND = ("WorkDir", "StdErr", "StdIn", "StdOut", "Power", "TresPerNode", "MailUser", "MailType")


def parse_show_line(line: str) -> dict[str, str]:
    """One `scontrol show ... -o` line → {Key: Value}. Values may contain spaces (`Command=/x/a.sh
    900`), so a value runs until the next ` Key=`; inside Command only the keys Slurm prints after
    it end the value (a script's own `name=value` arguments stay in it)."""
    out: dict[str, str] = {}
    matches = list(_KEY.finditer(line))
    current: str | None = None
    start = 0
    for match in matches:
        key = match.group(1)
        if current in _NOT_KEYS_AFTER and key not in _AFTER_COMMAND:
            continue
        if current is not None:
            out[current] = line[start : match.start()].strip()
        current, start = key, match.end()
    if current is not None:
        out[current] = line[start:].strip()
    return out


def parse_show_lines(text: str) -> list[dict[str, str]]:
    return [parse_show_line(line) for line in text.splitlines() if "=" in line]


@dataclass(frozen=True)
class ShownJob:
    """What `scontrol show job -o` says of one job (the fallback when squeue has lost it)."""

    job_id: int
    state: str
    reason: str
    nodes: tuple[str, ...]
    restarts: int
    exit_code: str
    stdout: str
    """Expanded: `StdOut=/path/run-12.out`."""


def shown_job(line: str) -> ShownJob | None:
    data = parse_show_line(line)
    if "JobId" not in data:
        return None
    return ShownJob(
        job_id=int(data["JobId"]) if data["JobId"].isdigit() else 0,
        state=data.get("JobState", "UNKNOWN"),
        reason=data.get("Reason", "None"),
        nodes=tuple(expand(data.get("NodeList", ""))),
        restarts=int(data.get("Restarts", "0") or 0) if data.get("Restarts", "0").isdigit() else 0,
        exit_code=data.get("ExitCode", ""),
        stdout=data.get("StdOut", ""),
    )


@dataclass(frozen=True)
class AcctRecord:
    """One job (not step) line of `sacct -P --format=JobID,JobName,State,ExitCode,Start,End,NodeList,AllocTRES`
    (text, not `--json`: 22.05's JSON reports a failed job's exit code as 0)."""

    job_id: str
    state: str
    """`CANCELLED by 0` is read as CANCELLED."""
    exit_code: str
    nodes: tuple[str, ...]


def parse_sacct(text: str) -> list[AcctRecord]:
    out = []
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 7 or "." in parts[0] or not parts[0][:1].isdigit():
            continue
        out.append(AcctRecord(parts[0], parts[2].split(" ")[0], parts[3], tuple(expand(parts[6]))))
    return out
