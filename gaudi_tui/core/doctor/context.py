"""Everything a check may look at, in one object tests can build: environment, filesystem root,
installed packages, the device snapshot and the card holders.

The device snapshot and the holders come from `gaudi_tui.core.devices` (hl-smi and /proc); the
default providers import those lazily, so a missing or failing source makes the checks that need
it say "skip" with the reason instead of breaking the checklist.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol, TypeVar, cast

from gaudi_tui.core.devices.model import DeviceSnapshot

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 20.0
DEVICE_QUERY_TIMEOUT_S = 10.0


class Unavailable(Exception):
    """A provider could not produce its value; the message says why."""


class Holder(Protocol):
    """A process holding a card's compute node (`gaudi_tui.core.devices.holders.CardHolder`)."""

    @property
    def index(self) -> int: ...
    @property
    def pid(self) -> int: ...
    @property
    def user(self) -> str | None: ...
    @property
    def command(self) -> str: ...


class DiskUsage(NamedTuple):
    total: int
    used: int
    free: int


def read_disk_usage(path: str) -> DiskUsage:
    total, used, free = shutil.disk_usage(path)
    return DiskUsage(total, used, free)


def read_device_snapshot() -> DeviceSnapshot:
    try:
        from gaudi_tui.core.devices.query import read_once
    except ImportError as exc:
        raise Unavailable(f"the device query is not available ({exc})") from exc
    return read_once(timeout=DEVICE_QUERY_TIMEOUT_S)


def find_card_holders() -> Sequence[Holder]:
    try:
        from gaudi_tui.core.devices.holders import find_holders
    except ImportError as exc:
        raise Unavailable(f"the card holder scan is not available ({exc})") from exc
    return find_holders()


@dataclass(frozen=True)
class CheckContext:
    env: Mapping[str, str]
    python: str = sys.executable
    """Interpreter of the isolated checks' child processes (they run with `env`)."""
    root: Path = Path("/")
    """Where /dev, /sys, /proc and /.dockerenv are read (tests point it at a folder)."""
    timeout: float = DEFAULT_TIMEOUT_S
    """Limit for each check, child processes included."""
    site_path: tuple[str, ...] | None = None
    """Folders searched for installed packages; None: the env's PYTHONPATH, then this interpreter's path."""
    snapshot_provider: Callable[[], DeviceSnapshot] = read_device_snapshot
    holders_provider: Callable[[], Sequence[Holder]] = find_card_holders
    disk_usage: Callable[[str], DiskUsage] = read_disk_usage
    connect_timeout: float = 3.0
    cancel: threading.Event = field(default_factory=threading.Event)
    _memo: dict[str, object] = field(default_factory=dict, repr=False, compare=False)
    _locks: dict[str, threading.Lock] = field(
        default_factory=lambda: {"snapshot": threading.Lock(), "holders": threading.Lock()},
        repr=False,
        compare=False,
    )
    _children: set[int] = field(default_factory=set, repr=False, compare=False)

    @classmethod
    def for_this_host(
        cls, cancel: threading.Event | None = None, timeout: float = DEFAULT_TIMEOUT_S
    ) -> CheckContext:
        return cls(env=dict(os.environ), timeout=timeout, cancel=cancel or threading.Event())

    def snapshot(self) -> DeviceSnapshot:
        """The device map (hl-smi), read once per context; raises Unavailable."""
        return self._once("snapshot", self.snapshot_provider)

    def holders(self) -> list[Holder]:
        """Processes holding cards, except this doctor's own children; raises Unavailable."""
        found = self._once("holders", lambda: list(self.holders_provider()))
        return [h for h in found if h.pid not in self._children]

    def _once(self, key: str, provider: Callable[[], T]) -> T:
        """The provider's value (or its Unavailable), computed by the first caller; others wait."""
        with self._locks[key]:
            if key not in self._memo:
                try:
                    self._memo[key] = provider()
                except Unavailable as exc:
                    self._memo[key] = exc
                except Exception as exc:  # noqa: BLE001 - a broken source is a finding, not a crash
                    self._memo[key] = Unavailable(f"{type(exc).__name__}: {exc}")
            value = self._memo[key]
        if isinstance(value, Unavailable):
            raise value
        return cast(T, value)  # the memo holds what this key's provider returned

    def track_child(self, pid: int) -> None:
        """Remember a child of this doctor, so a card it opens is not reported as busy."""
        self._children.add(pid)  # set.add is atomic under the GIL; never waits on a provider

    def version(self, distribution: str) -> str | None:
        """Installed version of a distribution (importlib.metadata, never `pip list`)."""
        path = list(self.site_path) if self.site_path is not None else self._default_site_path()
        for dist in importlib.metadata.distributions(name=distribution, path=path):
            return dist.version
        return None

    def _default_site_path(self) -> list[str]:
        extra = [p for p in self.env.get("PYTHONPATH", "").split(os.pathsep) if p]
        return extra + [p for p in sys.path if p not in extra]

    def host_path(self, path: str) -> Path:
        """A host path (`/dev/accel`) under this context's root."""
        return self.root / path.lstrip("/")

    def which(self, command: str) -> str | None:
        return shutil.which(command, path=self.env.get("PATH", os.defpath))
