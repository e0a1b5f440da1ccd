"""Which process holds which card: scan `/proc/*/fd` for `/dev/accel/accelN` (or legacy `/dev/hlN`).

Works without root for the user's own processes; other users' and other containers' fds are
unreadable, so a card can be busy with no visible holder. Stopping a holder sends SIGTERM and,
if asked again, SIGKILL, only to processes the user owns, after checking the PID still names the
same process (same start time); without a readable start time it refuses.
"""

from __future__ import annotations

import os
import pwd
import re
import signal
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DEFAULT_NODE_PATTERN = r"^/dev/(?:accel/accel|hl)(\d+)$"
"""A card's device node: `/dev/accel/accelN` (or the legacy `/dev/hlN`); the group is N."""


@dataclass(frozen=True)
class CardHolder:
    index: int
    pid: int
    user: str | None
    command: str
    started: float | None
    device_path: str


@lru_cache(maxsize=256)
def _user_name(uid: int) -> str | None:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


@lru_cache(maxsize=4)
def _boot_time(proc_root: str) -> float | None:
    try:
        for line in Path(proc_root, "stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except OSError:
        pass
    return None


def start_time(pid: int, proc_root: str = "/proc") -> float | None:
    """When process `pid` started (seconds since the epoch), from `/proc/<pid>/stat`."""
    try:
        stat = Path(proc_root, str(pid), "stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    boot = _boot_time(proc_root)
    if boot is None or len(fields) < 20:
        return None
    return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _command(pid_dir: str) -> str:
    try:
        raw = Path(pid_dir, "cmdline").read_bytes()
        command = raw.replace(b"\0", b" ").decode(errors="replace").strip()
        if command:
            return command
        return Path(pid_dir, "comm").read_text().strip()
    except OSError:
        return "?"


def _uid(pid_dir: str) -> int | None:
    try:
        return os.stat(pid_dir).st_uid
    except OSError:
        return None


def find_holders(proc_root: str = "/proc", node_pattern: str = DEFAULT_NODE_PATTERN) -> list[CardHolder]:
    """Every (card, process) pair where the process has the card's compute node open.

    `node_pattern` matches the fd's link target and captures the card index (tests point it at
    stand-in files).
    """
    pattern = re.compile(node_pattern)
    holders: list[CardHolder] = []
    try:
        pids = [e.name for e in os.scandir(proc_root) if e.name.isdigit()]
    except OSError:
        return holders
    for pid in pids:
        pid_dir = f"{proc_root}/{pid}"
        try:
            fds = os.scandir(f"{pid_dir}/fd")
        except OSError:
            continue
        found: dict[int, str] = {}
        with fds:
            for fd in fds:
                try:
                    target = os.readlink(fd.path)
                except OSError:
                    continue
                match = pattern.match(target)
                if match:
                    found.setdefault(int(match.group(1)), target)
        if not found:
            continue
        uid = _uid(pid_dir)
        command = _command(pid_dir)
        started = start_time(int(pid), proc_root)
        for index, path in sorted(found.items()):
            user = _user_name(uid) if uid is not None else None
            holders.append(CardHolder(index, int(pid), user, command, started, path))
    return sorted(holders, key=lambda h: (h.index, h.pid))


def can_signal(holder: CardHolder, proc_root: str = "/proc") -> str | None:
    """None if this user may stop the holder, else why not."""
    uid = _uid(f"{proc_root}/{holder.pid}")
    if uid is None:
        return f"process {holder.pid} has already exited"
    if os.getuid() not in (0, uid):
        return f"process {holder.pid} belongs to {_user_name(uid)}; only that user or root can stop it"
    if holder.started is None:
        return (
            f"the start time of PID {holder.pid} could not be read when it was found, so there is no way "
            "to confirm the PID still names the same process; stop it from a shell if you are sure"
        )
    now = start_time(holder.pid, proc_root)
    if now is None:
        return f"the start time of PID {holder.pid} cannot be read now ({proc_root}/{holder.pid}/stat)"
    if now != holder.started:
        return f"PID {holder.pid} now names a different process; refresh and try again"
    return None


def send(holder: CardHolder, sig: signal.Signals, proc_root: str = "/proc") -> str | None:
    """Send `sig` to the holder after `can_signal`; None on success, else the reason it was not sent."""
    refusal = can_signal(holder, proc_root)
    if refusal:
        return refusal
    try:
        os.kill(holder.pid, sig)
    except ProcessLookupError:
        return f"process {holder.pid} has already exited"
    except PermissionError as error:
        return f"not allowed to signal process {holder.pid}: {error.strerror}"
    return None


def wait_gone(
    holder: CardHolder, timeout: float, cancel: threading.Event | None = None, proc_root: str = "/proc"
) -> bool:
    """Wait until the holder's process has exited (or become a zombie); True if it did in time."""
    deadline = time.monotonic() + timeout
    cancel = cancel or threading.Event()
    while True:
        if not _alive(holder, proc_root):
            return True
        if time.monotonic() >= deadline or cancel.wait(0.05):
            return not _alive(holder, proc_root)


def _alive(holder: CardHolder, proc_root: str) -> bool:
    try:
        stat = Path(proc_root, str(holder.pid), "stat").read_text()
    except OSError:
        return False
    state = stat[stat.rfind(")") + 2 :].split()[0]
    if state in ("Z", "X"):
        return False
    started = start_time(holder.pid, proc_root)
    return started is not None and started == holder.started
