"""Where alerts are kept: the notifications file every alert is appended to, and the ledger that
makes each alert (by its key) go out once.

Both live in `<state>/alerts/` (`GAUDI_TUI_HOME/state/alerts` in tests); a job's ledger lives in its
run folder (`<run>/alerts/`), so a re-attached supervisor never repeats what the first one sent.

- `notifications.jsonl`: one `Alert` a line, appended with one write under a lock; past
  `MAX_BYTES` it becomes `notifications.jsonl.1` (the one before is dropped) and a new file starts.
  `NotificationReader` follows it by offset: every byte is read once, a rotation is noticed by the
  file's inode, and the old file's rest is read before the new one.
- `Ledger`: one claim file per key (named by the key's hash), made under a lock: the first process
  to claim a key sends the alert; any other (the panel and `gaudi-tui watch` running together, a
  second supervisor) sees it claimed. A claim may expire (`repeat_s`): card alerts come back a day
  later if the condition still holds; job alerts never expire.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gaudi_tui.core import paths
from gaudi_tui.core.alerts.model import Alert

FILE_NAME = "notifications.jsonl"
MAX_BYTES = 1 << 20
MAX_READ = 1 << 20
"""A reader takes at most this much per poll (the rest at the next)."""


def alerts_dir() -> Path:
    path = paths.state_dir() / "alerts"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def notifications_path() -> Path:
    return alerts_dir() / FILE_NAME


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    with open(folder / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def append(alert: Alert, path: Path | None = None) -> None:
    """Add the alert to the notifications file (rotating it when full)."""
    path = path or notifications_path()
    data = (alert.to_json() + "\n").encode()
    with _locked(path.parent):
        try:
            if path.stat().st_size + len(data) > MAX_BYTES:
                os.replace(path, path.with_name(path.name + ".1"))
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


class NotificationReader:
    """Follows the notifications file: `poll()` returns the alerts appended since the last poll."""

    def __init__(self, path: Path | None = None, from_start: bool = False) -> None:
        self.path = path or notifications_path()
        self.inode: int | None = None
        self.offset = 0
        if not from_start:
            try:
                st = self.path.stat()
                self.inode, self.offset = st.st_ino, st.st_size
            except OSError:
                pass

    def history(self) -> list[Alert]:
        """Every alert kept (the rotated file's, then the current one's), and follow from there."""
        older = self._read_from(self.path.with_name(self.path.name + ".1"), 0, None)[0]
        self.inode, self.offset = None, 0
        return older + self.poll()

    def poll(self) -> list[Alert]:
        try:
            st = self.path.stat()
        except OSError:
            return []
        alerts: list[Alert] = []
        if self.inode is not None and st.st_ino != self.inode:  # rotated: the old file's rest first
            rotated = self.path.with_name(self.path.name + ".1")
            alerts, _ = self._read_from(rotated, self.offset, self.inode)
            self.offset = 0
        elif st.st_size < self.offset:  # cut by hand: start again
            self.offset = 0
        self.inode = st.st_ino
        found, self.offset = self._read_from(self.path, self.offset, st.st_ino)
        return alerts + found

    @staticmethod
    def _read_from(path: Path, offset: int, inode: int | None) -> tuple[list[Alert], int]:
        """The complete lines of `path` from `offset` (only if it is still file `inode`, when given)."""
        try:
            with path.open("rb") as fh:
                if inode is not None and os.fstat(fh.fileno()).st_ino != inode:
                    return [], offset
                fh.seek(offset)
                data = fh.read(MAX_READ)
        except OSError:
            return [], offset
        complete = data.rfind(b"\n") + 1
        if not complete and len(data) == MAX_READ:  # a line longer than a read is no alert: passed
            return [], offset + len(data)  # over (else every poll read the same bytes again)
        lines = data[:complete].split(b"\n")
        return [a for a in (Alert.from_json(line) for line in lines if line.strip()) if a], offset + complete


class Ledger:
    """Which alert keys went out already, in `folder` (made on first claim)."""

    def __init__(self, folder: Path, repeat_s: float | None = None) -> None:
        self.folder = folder
        self.repeat_s = repeat_s

    def _claim_path(self, key: str) -> Path:
        return self.folder / hashlib.sha256(key.encode()).hexdigest()[:32]

    def claim(self, key: str) -> bool:
        """True for the first caller with this key (or the first after its claim expired)."""
        self.folder.mkdir(mode=0o700, exist_ok=True)  # never its parent: a deleted run folder stays deleted
        claim = self._claim_path(key)
        with _locked(self.folder):
            now = time.time()
            if self.repeat_s is not None:
                self._expire(now)
            try:
                fd = os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                return False
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(key + "\n")
            return True

    def _expire(self, now: float) -> None:
        assert self.repeat_s is not None
        for entry in os.scandir(self.folder):
            if entry.name.startswith("."):
                continue
            try:
                if now - entry.stat().st_mtime >= self.repeat_s:
                    os.unlink(entry.path)
            except OSError:
                continue
