"""Which process holds which card: scan `/proc/*/fd` for `/dev/accel/accelN` (or legacy `/dev/hlN`).

Works without root for the user's own processes; other users' and other containers' fds are
unreadable, so a card can be busy with no visible holder. `find_holders` reads every fd of every
process (a one-shot answer); `HolderScanner` gives the same answer for a feed that asks every few
seconds, rereading only the processes whose fds can have changed since it last looked. Stopping a holder sends SIGTERM and,
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
def user_name(uid: int) -> str | None:
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


def _held_nodes(pid_dir: str, pattern: re.Pattern[str]) -> dict[int, str] | None:
    """fd number → link target of the process's fds that are card nodes; None if its fds are
    unreadable (another user's process, or it has exited)."""
    found: dict[int, str] = {}
    try:
        fds = os.scandir(f"{pid_dir}/fd")
    except OSError:
        return None
    with fds:
        for fd in fds:
            try:
                target = os.readlink(fd.path)
            except OSError:  # closed meanwhile, or the process exited mid-scan
                continue
            if pattern.match(target):
                found[int(fd.name)] = target
    return found


def _describe(
    pid: int, pid_dir: str, held: dict[int, str], pattern: re.Pattern[str], proc_root: str
) -> tuple[CardHolder, ...]:
    """One CardHolder per card in `held` (a process holding a card through two fds counts once)."""
    by_card: dict[int, str] = {}
    for _, target in sorted(held.items()):
        match = pattern.match(target)
        if match:
            by_card.setdefault(int(match.group(1)), target)
    uid = _uid(pid_dir)
    user = user_name(uid) if uid is not None else None
    command = _command(pid_dir)
    started = start_time(pid, proc_root)
    return tuple(
        CardHolder(index, pid, user, command, started, path) for index, path in sorted(by_card.items())
    )


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
        held = _held_nodes(pid_dir, pattern)
        if held:
            holders.extend(_describe(int(pid), pid_dir, held, pattern, proc_root))
    return sorted(holders, key=lambda h: (h.index, h.pid))


@dataclass(frozen=True)
class _Seen:
    """What a scan learnt about one process."""

    signal: tuple[int, int]
    """(inode, size) of its /proc/PID/fd when its fds were read: a new process under a reused PID
    has a new inode; the size is its number of open fds (Linux ≥ 6.2)."""
    held: dict[int, str]
    """fd number → card node, of the fds that were card nodes then."""
    holders: tuple[CardHolder, ...]


def _counts_fds(proc_root: str) -> bool:
    """Whether `stat(/proc/PID/fd).st_size` is the process's number of open fds (Linux ≥ 6.2; it is
    0 on older kernels, and a stand-in /proc of tests has no such thing)."""
    if os.path.realpath(proc_root) != "/proc":
        return False
    try:
        return os.stat("/proc/self/fd").st_size > 0
    except OSError:
        return False


class HolderScanner:
    """`find_holders` for a feed that asks every few seconds, without rereading every process's fds.

    Each `scan()` lists /proc and stats each /proc/PID/fd. It reads the fds of a process it has not
    seen (a new PID, or a reused one: new inode), of one whose number of open fds changed, and of
    every process when the kernel does not count fds (before Linux 6.2: then each scan costs what
    `find_holders` does). A known holder whose fd count is unchanged is checked by rereading only
    the fds that held a card (still the node? same start time?). Every `full_every` seconds it reads
    every process's fds, as `find_holders` does.

    How soon a change shows: a holder that exits or closes its card, and a process that opens a card
    (at start or later: the open adds an fd), show at the next scan. Opening a card while closing
    another fd between two scans (the count unchanged) shows at the next full scan, within
    `full_every` seconds. Other users' processes whose fds are unreadable are never holders here;
    a process that exits mid-scan is skipped.
    """

    def __init__(
        self, proc_root: str = "/proc", node_pattern: str = DEFAULT_NODE_PATTERN, full_every: float = 30.0
    ) -> None:
        self.proc_root = proc_root
        self.pattern = re.compile(node_pattern)
        self.full_every = full_every
        self.counts_fds = _counts_fds(proc_root)
        self._seen: dict[int, _Seen] = {}
        self._full_at = float("-inf")

    def scan(self) -> list[CardHolder]:
        now = time.monotonic()
        full = not self.counts_fds or now - self._full_at >= self.full_every
        if full:
            self._full_at = now
        try:
            pids = [int(e.name) for e in os.scandir(self.proc_root) if e.name.isdigit()]
        except OSError:
            return []
        seen: dict[int, _Seen] = {}
        for pid in pids:
            pid_dir = f"{self.proc_root}/{pid}"
            try:
                st = os.stat(f"{pid_dir}/fd")
            except OSError:  # exited since the listing, or not ours to look at
                continue
            signal_now = (st.st_ino, st.st_size)
            before = self._seen.get(pid)
            if not full and before is not None and before.signal == signal_now:
                if not before.held or self._still_holds(pid, pid_dir, before):
                    seen[pid] = before
                    continue
            entry = self._read(pid, pid_dir, signal_now)
            if entry is not None:
                seen[pid] = entry
        self._seen = seen
        holders = [h for entry in seen.values() for h in entry.holders]
        return sorted(holders, key=lambda h: (h.index, h.pid))

    def _read(self, pid: int, pid_dir: str, signal_now: tuple[int, int]) -> _Seen | None:
        held = _held_nodes(pid_dir, self.pattern)
        if held is None:
            return None  # unreadable: asked again next scan (it may be a new process by then)
        holders = _describe(pid, pid_dir, held, self.pattern, self.proc_root) if held else ()
        return _Seen(signal_now, held, holders)

    def _still_holds(self, pid: int, pid_dir: str, before: _Seen) -> bool:
        """The fds that held a card still do, in the same process (start time)."""
        for fd, target in before.held.items():
            try:
                if os.readlink(f"{pid_dir}/fd/{fd}") != target:
                    return False
            except OSError:
                return False
        return start_time(pid, self.proc_root) == before.holders[0].started


def can_signal(holder: CardHolder, proc_root: str = "/proc") -> str | None:
    """None if this user may stop the holder, else why not."""
    uid = _uid(f"{proc_root}/{holder.pid}")
    if uid is None:
        return f"process {holder.pid} has already exited"
    if os.getuid() not in (0, uid):
        return f"process {holder.pid} belongs to {user_name(uid)}; only that user or root can stop it"
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
