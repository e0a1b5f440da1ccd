"""`status.json`: a job's state, processes and outcome, written atomically by one writer at a time.

The creator writes the first status (queued) before the supervisor exists; from then on only the
supervisor writes it. Readers tolerate a missing or half-written file by returning None.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import psutil

from gaudi_tui.core.untrusted.data import integer, number, text
from gaudi_tui.core.untrusted.files import load_json, write_atomic

State = Literal["queued", "running", "stopping", "succeeded", "failed", "stopped", "cancelled", "lost"]
ACTIVE: tuple[State, ...] = ("queued", "running", "stopping")
TERMINAL: tuple[State, ...] = ("succeeded", "failed", "stopped", "cancelled", "lost")
"""`stopped`: ended by the user's graceful stop (a checkpoint saved where the job makes one);
`cancelled`: ended by a kill, or cancelled outside gaudi-tui. Both resume alike; run folders
written before `stopped` existed say `cancelled` for a stop too."""


@dataclass(frozen=True)
class ProcRef:
    """A process as recorded: PID plus start time, so a reused PID is never mistaken for ours.

    `ticks` is the start time the kernel keeps (`/proc/PID/stat` field 22: clock ticks since
    boot), which a step of the wall clock does not move; `started` (psutil's create_time, boot
    time + ticks in wall-clock seconds) moves with every step. Identity is `ticks` where it was
    recorded, else (status.json files written before it was) `started` within 0.05 s."""

    pid: int
    started: float
    cmd: str = ""
    ticks: int | None = None

    @classmethod
    def of(cls, pid: int) -> ProcRef | None:
        try:
            proc = psutil.Process(pid)
            return cls(pid, proc.create_time(), " ".join(proc.cmdline())[:200], start_ticks(pid))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return None

    def process(self) -> psutil.Process | None:
        """The live process if it is still this one (same start time), else None."""
        try:
            proc = psutil.Process(self.pid)
            ticks = start_ticks(self.pid) if self.ticks is not None else None
            if ticks is not None:
                same = ticks == self.ticks
            else:
                same = abs(proc.create_time() - self.started) <= 0.05
            if not same or proc.status() == psutil.STATUS_ZOMBIE:
                return None
            return proc
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return None

    def alive(self) -> bool:
        return self.process() is not None


def start_ticks(pid: int) -> int | None:
    """When the process started, in clock ticks since boot (`/proc/PID/stat` field 22), or None
    where it cannot be read (no /proc, the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # the name (field 2) may hold spaces and parentheses
    try:
        return int(fields[19])  # field 22 overall: fields 3.. follow the name
    except (IndexError, ValueError):
        return None


@dataclass(frozen=True)
class JobStatus:
    state: State = "queued"
    created: float = 0.0
    queued: float = 0.0
    """When this attempt was queued (creation, or the latest resume)."""
    started: float | None = None
    ended: float | None = None
    earlier_seconds: float = 0.0
    """Run time of earlier attempts (before a resume), for the elapsed column."""
    attempt: int = 1
    resumed_from: str | None = None
    accelerator: str = "cpu"
    command: tuple[str, ...] = ()
    supervisor: ProcRef | None = None
    launcher: ProcRef | None = None
    workers: tuple[ProcRef, ...] = field(default_factory=tuple)
    stop_requested: bool = False
    kill_requested: bool = False
    exit_code: int | None = None
    error: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_dict(cls, data: dict) -> JobStatus:
        """A status from its JSON; ValueError when a field is not of its kind (a damaged or
        hand-written file: every reader takes the fields as they are typed)."""
        refs = {
            "supervisor": _ref(data.get("supervisor")),
            "launcher": _ref(data.get("launcher")),
            "workers": tuple(r for r in (_ref(w) for w in data.get("workers") or ()) if r),
            "command": tuple(data.get("command") or ()),
        }
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for name, value in known.items():
            if name not in refs and not _FIELD_KINDS[name](value):
                raise ValueError(f"status.json: {name} is not of its kind")
        if not all(isinstance(part, str) for part in refs["command"]):  # type: ignore[union-attr]
            raise ValueError("status.json: command is not a list of strings")
        return cls(**{**known, **refs})

    def elapsed(self, now: float) -> float:
        if self.started is None:
            return self.earlier_seconds
        end = self.ended if self.ended is not None else now
        return self.earlier_seconds + max(0.0, end - self.started)

    def with_(self, **changes: Any) -> JobStatus:
        return replace(self, **changes)


def _ref(data: object) -> ProcRef | None:
    if not isinstance(data, dict):
        return None
    pid, started = integer(data.get("pid"), lo=1), number(data.get("started"), lo=0)
    if pid is None or started is None:
        raise ValueError("status.json: a process without its pid and start time")
    return ProcRef(
        pid, started, text(data.get("cmd", ""), max_chars=200) or "", integer(data.get("ticks"), lo=0)
    )


def _optional(check: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda value: value is None or check(value)


def _is_number(value: object) -> bool:
    return number(value) is not None


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and integer(value) is not None


def _is_text(value: object) -> bool:
    return text(value) is not None


_FIELD_KINDS: dict[str, Callable[[object], bool]] = {
    "state": lambda value: value in ACTIVE or value in TERMINAL,
    "created": _is_number,
    "queued": _is_number,
    "started": _optional(_is_number),
    "ended": _optional(_is_number),
    "earlier_seconds": _is_number,
    "attempt": _is_whole,
    "resumed_from": _optional(_is_text),
    "accelerator": _is_text,
    "stop_requested": lambda value: isinstance(value, bool),
    "kill_requested": lambda value: isinstance(value, bool),
    "exit_code": _optional(_is_whole),
    "error": _optional(_is_text),
}
"""What each field of status.json must be (supervisor, launcher, workers, command: `_ref`, above)."""


def write(path: Path, status: JobStatus) -> None:
    """Write atomically: temp file in the same folder, fsync, rename over."""
    write_atomic(path, status.to_json())


def read(path: Path) -> JobStatus | None:
    try:
        data = load_json(path)
        return JobStatus.from_dict(data) if isinstance(data, dict) else None
    except (OSError, ValueError, TypeError, KeyError):
        return None


START_TIMEOUT_S = 60.0


def effective_state(status: JobStatus, now: float) -> State:
    """The stored state, except that an active job whose supervisor is gone (or never came) is 'lost'."""
    if status.state not in ACTIVE:
        return status.state
    if status.supervisor is None:
        return "lost" if now - status.queued > START_TIMEOUT_S else status.state
    return status.state if status.supervisor.alive() else "lost"
