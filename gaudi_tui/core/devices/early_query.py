"""The first picture's hl-smi query, started as the panel launches.

`gaudi-tui` starts `hl-smi -Q … -f csv,noheader,nounits` before it loads Textual, so hl-smi runs
while Textual loads (issue 41: the map painted as soon as a lone `hl-smi -Q` would be). If it has
answered by the time the Devices screen is composed, its first frame is the map with those cards
(`ready_answer`, `first_snapshot`); else the screen's first frame is its skeleton and the feed
(`DeviceMonitor`) reads the answer, waiting for it as for any one-shot hl-smi (`take`). Only when
the feed would run hl-smi: hl-smi is on PATH and pyhlml (HLML, the feed's first choice) is not
installed. An answer not taken within FRESH_S is not used: its child is ended and the feed asks anew.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from importlib.util import find_spec
from typing import TYPE_CHECKING

from gaudi_tui.core.devices.csv_query import QUERY_FIELDS, query_args

if TYPE_CHECKING:
    from gaudi_tui.core.devices.model import DeviceSnapshot

FRESH_S = 5.0
"""The oldest early answer the feed takes as its first picture."""
READ_S = 0.02
"""The longest `ready_answer` reads the pipes of a child that has ended (they are closed at once)."""
END_WAIT_S = 1.0
"""How long an unused child is waited for once killed."""


class EarlyQuery:
    """One running `hl-smi -Q` child, given once to whoever takes it; `close()` ends it if no one did."""

    def __init__(self, executable: str, child: subprocess.Popen[bytes]) -> None:
        self.executable = executable
        self.started_at = time.monotonic()
        self._child: subprocess.Popen[bytes] | None = child
        self._answer: str | None = None
        self._lock = threading.Lock()

    def ready_answer(self) -> str | None:
        """What hl-smi printed, if it has already ended well (this never waits) and it is fresh; kept
        for the feed."""
        if time.monotonic() - self.started_at > FRESH_S:
            self.close()
            return None
        with self._lock:
            child = self._child
            if self._answer is None and child is not None and child.poll() == 0:
                try:  # it has ended, so its pipes close at once, unless something it started holds them
                    out, _ = child.communicate(timeout=READ_S)
                except subprocess.TimeoutExpired:  # then the feed reads on (communicate resumes)
                    return None
                self._answer, self._child = out.decode(errors="replace"), None
            return self._answer

    def take(self, executable: str) -> subprocess.Popen[bytes] | None:
        """The child, to read to its end, if it is `executable`'s and fresh; else None (then it is
        ended). Only the first call gets it."""
        with self._lock:
            child, self._child = self._child, None
        if child is None:
            return None
        if executable != self.executable or time.monotonic() - self.started_at > FRESH_S:
            _end(child)
            return None
        return child

    def close(self) -> None:
        with self._lock:
            child, self._child, self._answer = self._child, None, None
        if child is not None:
            _end(child)


def start(executable: str = "hl-smi") -> EarlyQuery | None:
    """Start the query if the panel's feed will run hl-smi; None if not, or if it cannot start."""
    if find_spec("pyhlml") is not None or shutil.which(executable) is None:
        return None
    try:
        child = subprocess.Popen(
            [executable, *query_args(QUERY_FIELDS)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError:  # the feed will say why when it runs hl-smi itself
        return None
    return EarlyQuery(executable, child)


def first_snapshot(answer: str) -> DeviceSnapshot | None:
    """The cards of an early answer, as the feed's first picture would show them but for what the
    feed adds (sysfs's NUMA nodes, the holders), or None if it names no card."""
    from gaudi_tui.core.devices.parsers.parse_csv import parse_csv

    reading = parse_csv(answer, QUERY_FIELDS)
    return reading.to_snapshot("hl-smi") if reading.devices else None


def _end(child: subprocess.Popen[bytes]) -> None:
    child.kill()
    try:
        child.wait(END_WAIT_S)
    except subprocess.TimeoutExpired:  # stuck in the kernel: the feed's own children report such a card
        pass
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()
