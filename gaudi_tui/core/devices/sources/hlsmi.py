"""Running hl-smi: the long-lived `-l N` poller (the one-shot commands: `hlsmi_once.py`).

The poller keeps ONE child, `hl-smi -Q <fields> -f csv,noheader,nounits -l N`, and turns each
refresh into a Reading. If the child dies, hangs (prints nothing for `stall_timeout`) or refuses
the field list, it is ended and started again after a growing pause (backoff), and each problem is
reported as a Fault. The child is always ended when the poller stops. A refresh (or fault) whose
handling raises is logged once while it keeps raising and shown as a fault; the poller goes on.
"""

from __future__ import annotations

import logging
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial

from gaudi_tui.core import processes
from gaudi_tui.core.devices import faults
from gaudi_tui.core.devices.csv_query import BASIC_FIELDS, QUERY_FIELDS, query_args
from gaudi_tui.core.devices.faults import Fault
from gaudi_tui.core.devices.model import Device
from gaudi_tui.core.devices.parsers.parse_csv import parse_row
from gaudi_tui.core.devices.reading import Reading
from gaudi_tui.core.devices.sources.hlsmi_once import close_streams, refused_fields, tail
from gaudi_tui.core.processes import Ending

QUIET_S = 0.15
"""A refresh is complete when the pipe has been quiet this long (or an index comes round again)."""
LONGEST_TICK_S = 1.0
"""…or when lines have been arriving for this long without either (a child printing garbage)."""
IDLE_S = 0.2
"""The longest the reader sleeps with nothing pending: it wakes on the child's output, and this
often to see a cancel and a stall."""

log = logging.getLogger(__name__)


class Backoff:
    """Pauses of start, 2×start, 4×start … up to `limit`; `reset()` after a success."""

    def __init__(self, start: float = 1.0, limit: float = 30.0) -> None:
        self.start, self.limit = start, limit
        self.next = start

    def take(self) -> float:
        pause = self.next
        self.next = min(self.limit, self.next * 2)
        return pause

    def reset(self) -> None:
        self.next = self.start


class HlSmiPoller:
    """One long-lived `hl-smi -Q … -l N` child, restarted with backoff; call `run()` in a thread."""

    def __init__(
        self,
        executable: str,
        interval: int,
        on_reading: Callable[[Reading], None],
        on_fault: Callable[[Fault, float | None], None],
        cancel: threading.Event,
        stall_timeout: float | None = None,
        backoff: Backoff | None = None,
        on_wait: Callable[[], None] | None = None,
    ) -> None:
        self.executable = executable
        self.interval = max(1, int(interval))
        self.on_reading = on_reading
        self.on_fault = on_fault
        self.on_wait = on_wait
        self.cancel = cancel
        self.stall_timeout = stall_timeout or 3 * self.interval + 10
        self.backoff = backoff or Backoff()
        self.fields: tuple[str, ...] = QUERY_FIELDS
        self.child: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.failing = False
        """The last refresh's handling raised (and was logged)."""
        self._lock = threading.Lock()

    def run(self) -> Fault | None:
        """Poll until cancelled (returns None) or hl-smi is missing (returns that fault)."""
        try:
            while not self.cancel.is_set():
                fault, got_rows = self._run_child()
                if self.cancel.is_set():
                    return None
                if fault is None:
                    continue
                if fault.code == "hl-smi-missing":
                    self._hand(partial(self.on_fault, fault, None))
                    return fault
                if not got_rows and self.fields == QUERY_FIELDS and refused_fields(fault):
                    self.fields = BASIC_FIELDS  # an older hl-smi refusing `power.max`: ask for less
                    continue
                pause = self.backoff.take()
                self._hand(partial(self.on_fault, fault, pause))
                self._wait(pause)
            return None
        finally:
            self.stop()

    def _hand(self, call: Callable[[], object]) -> None:
        """Hand a refresh (a fault, a wait) to the feed: what that raises is logged once while it keeps
        raising and shown as a fault (if that can be), and the poller reads on."""
        try:
            call()
        except Exception as error:  # one refresh's bug must not end the card feed
            if not self.failing:
                log.exception("hl-smi poller: a refresh could not be handled (the next ones are)")
            self.failing = True
            try:
                self.on_fault(faults.feed_failed(f"{type(error).__name__}: {error}"[:200]), None)
            except Exception:  # noqa: BLE001, S110 - logged above; the poller goes on
                pass
            return
        self.failing = False

    def _wait(self, pause: float) -> None:
        """Sleep `pause` seconds (cancel-aware), calling on_wait once per interval so the host row lives on."""
        deadline = time.monotonic() + pause
        while not self.cancel.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if self.cancel.wait(min(left, self.interval)):
                return
            if self.on_wait is not None and time.monotonic() < deadline:
                self._hand(self.on_wait)

    def stop(self, first_wait: float = 0.0) -> Ending:
        """End the child (TERM, then KILL after 1 s; every wait limited) and reap it."""
        with self._lock:
            child, self.child = self.child, None
        if child is None:
            return "exited"
        ending = processes.end_child(child, "hl-smi", first_wait=first_wait, term_wait=1.0)
        close_streams(child)
        return ending

    def _start(self) -> Fault | None:
        try:
            child = subprocess.Popen(
                [self.executable, *query_args(self.fields, self.interval)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
            )
        except FileNotFoundError:
            return faults.hl_smi_missing(self.executable)
        except OSError as error:
            return faults.hl_smi_exited(-1, f"cannot start {self.executable}: {error.strerror}")
        with self._lock:
            self.child = child
        self.starts += 1
        return None

    def _run_child(self) -> tuple[Fault | None, bool]:
        """Start a child and read it until it ends, hangs or we are cancelled; (fault, rows seen)."""
        fault = self._start()
        if fault is not None:
            return fault, False
        child = self.child
        assert child is not None and child.stdout is not None and child.stderr is not None
        reader = _TickReader(self.fields)
        stderr = b""
        got_rows = False
        with selectors.DefaultSelector() as selector:
            selector.register(child.stdout, selectors.EVENT_READ, "out")
            selector.register(child.stderr, selectors.EVENT_READ, "err")
            last_progress = time.monotonic()
            open_streams = 2
            while not self.cancel.is_set() and open_streams:
                events = selector.select(reader.wait_s(time.monotonic()))
                now = time.monotonic()
                for key, _ in events:
                    data = os.read(key.fd, 65536)
                    if not data:
                        selector.unregister(key.fileobj)
                        open_streams -= 1
                    elif key.data == "err":
                        stderr = (stderr + data)[-4096:]
                    else:
                        reader.feed(data, now)
                for tick in reader.ready(now):
                    last_progress = now
                    if tick.devices:
                        got_rows = True
                        self.backoff.reset()
                        self._hand(partial(self.on_reading, tick))
                    else:
                        garbage = faults.hl_smi_garbage(tick.errors[0][:60] if tick.errors else "?")
                        self._hand(partial(self.on_fault, garbage, None))
                if now - last_progress > self.stall_timeout:
                    if self.stop() == "abandoned":
                        return faults.hl_smi_abandoned(child.pid), got_rows
                    return faults.hl_smi_hung(self.stall_timeout), got_rows
        if self.cancel.is_set():
            return None, got_rows
        for tick in reader.ready(float("inf")):
            if tick.devices:
                got_rows = True
                self._hand(partial(self.on_reading, tick))
        if self.stop(first_wait=2.0) == "abandoned":  # it closed its pipes but does not exit
            return faults.hl_smi_abandoned(child.pid), got_rows
        code = child.returncode
        if code == 0:
            return faults.hl_smi_exited(0, "it stopped looping " + tail(stderr)), got_rows
        return faults.hl_smi_exited(code, tail(stderr)), got_rows


class _TickReader:
    """Splits the `-l` stream into refreshes: by a repeated index, or by a quiet pipe."""

    def __init__(self, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self.buffer = b""
        self.devices: list[Device] = []
        self.errors: list[str] = []
        self.driver: str | None = None
        self.last_data = 0.0
        self.pending_since: float | None = None
        self.done: list[Reading] = []

    @property
    def pending(self) -> bool:
        return bool(self.devices or self.errors or self.buffer)

    def feed(self, data: bytes, now: float) -> None:
        self.last_data = now
        if self.pending_since is None:
            self.pending_since = now
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        for raw in lines:
            line = raw.decode(errors="replace").strip()
            if not line:
                continue
            row = parse_row(self.fields, line, fallback_index=len(self.devices))
            if row.device is None:
                self.errors.append(row.error or line)
                continue
            if any(d.index == row.device.index for d in self.devices):
                self._flush()
            self.devices.append(row.device)
            self.driver = row.driver_version or self.driver

    def _flush(self) -> None:
        if self.devices or self.errors:
            self.done.append(
                Reading(
                    kind="csv",
                    devices=tuple(self.devices),
                    driver_version=self.driver,
                    errors=tuple(self.errors),
                )
            )
        self.devices, self.errors = [], []
        self.pending_since = None

    def wait_s(self, now: float) -> float:
        """How long the pipe may stay unread: until a pending refresh is due (its quiet period, or
        the longest tick), else `IDLE_S`. One wake a refresh, not a poll every 50 ms."""
        if not self.pending:
            return IDLE_S
        since = self.pending_since if self.pending_since is not None else self.last_data
        due = min(self.last_data + QUIET_S, since + LONGEST_TICK_S)
        return max(0.01, min(IDLE_S, due - now))

    def ready(self, now: float) -> list[Reading]:
        overdue = self.pending_since is not None and now - self.pending_since >= LONGEST_TICK_S
        if now - self.last_data >= QUIET_S or overdue:
            if self.buffer.strip():
                self.feed(b"\n", self.last_data)
            self.buffer = b""  # what is left is blank
            self._flush()
        done, self.done = self.done, []
        return done
