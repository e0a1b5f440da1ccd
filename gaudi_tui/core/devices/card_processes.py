"""Every process on each card: hl-smi's process table merged with the /proc holders.

hl-smi's table gives PID, a name cut to 15 characters and the device memory, but (without root, or
inside a container) not other users' processes; the /proc scan gives the user, the full command
line and the start time of the processes whose open files this user may read. Together: one row
per (card, PID). For a PID only hl-smi lists, /proc is asked for its owner, command line and start
time, which another container's PID namespace (or `hidepid`) hides: those stay None.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from gaudi_tui.core.devices.holders import CardHolder, start_time, user_name
from gaudi_tui.core.devices.model import DeviceProcess


def _owner(pid: int, proc_root: str) -> str | None:
    try:
        return user_name(os.stat(f"{proc_root}/{pid}").st_uid)
    except OSError:
        return None


def _command(pid: int, proc_root: str) -> str | None:
    try:
        raw = Path(proc_root, str(pid), "cmdline").read_bytes()
    except OSError:
        return None
    return raw.replace(b"\0", b" ").decode(errors="replace").strip() or None


def merge_processes(
    table: Iterable[DeviceProcess], holders: Iterable[CardHolder], proc_root: str | None = "/proc"
) -> tuple[DeviceProcess, ...]:
    """One row per (card, PID). `proc_root=None` (a replay or a saved output: the PIDs are another
    host's) asks /proc nothing."""
    listed = {(p.index, p.pid): p for p in table}
    rows: dict[tuple[int, int], DeviceProcess] = {}
    for holder in holders:
        row = listed.get((holder.index, holder.pid))
        rows[(holder.index, holder.pid)] = DeviceProcess(
            holder.index,
            holder.pid,
            row.name if row is not None else holder.command.split(" ", 1)[0].rsplit("/", 1)[-1] or "?",
            row.memory_mib if row is not None else None,
            holder.user,
            holder.command,
            holder.started,
            "hl-smi+/proc" if row is not None else "/proc",
        )
    for key, row in listed.items():
        if key in rows:
            continue
        if proc_root is None:
            rows[key] = row
            continue
        rows[key] = DeviceProcess(
            row.index,
            row.pid,
            row.name,
            row.memory_mib,
            row.user or _owner(row.pid, proc_root),
            _command(row.pid, proc_root),
            start_time(row.pid, proc_root),
            "hl-smi",
        )
    return tuple(rows[key] for key in sorted(rows))


class ProcessMerge:
    """`merge_processes`, remembered: the same hl-smi table and holders (equal, though each refresh
    brings new tuples) give the last rows without asking /proc again. The table is read every 30 s
    and the holders every few seconds, where the screen merges every refresh."""

    def __init__(self) -> None:
        self._last: tuple[tuple[object, ...], tuple[DeviceProcess, ...]] | None = None

    def __call__(
        self, table: Iterable[DeviceProcess], holders: Iterable[CardHolder], proc_root: str | None
    ) -> tuple[DeviceProcess, ...]:
        key = (tuple(table), tuple(holders), proc_root)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        rows = merge_processes(key[0], key[1], proc_root)
        self._last = (key, rows)
        return rows


def is_mine(process: DeviceProcess) -> bool:
    """Owned by the user running the panel (root owns everything)."""
    if process.user is None:
        return False
    return os.getuid() == 0 or process.user == user_name(os.getuid())
