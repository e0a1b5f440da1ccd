"""The job's log stream split into the run folder: metrics.jsonl, stdout.log, ranks."""

from __future__ import annotations

import hashlib
import re
import threading
from collections import deque

from gaudi_tui.core.jobs.readers import lines
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.targets.ray.record import ClusterRecord
from gaudi_tui.core.jobs.worker.logstream import (
    METRIC_PREFIX,
    RANK_PREFIX,
    STOPPED_PREFIX,
    WRAPPER_MARKER,
    WRAPPER_PREFIX,
)
from gaudi_tui.core.untrusted.data import Untrusted, integer, loads
from gaudi_tui.core.untrusted.data import text as text_of
from gaudi_tui.core.untrusted.files import write_atomic

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class LogMirror:
    """Splits the job's log (Ray's, as the stream or `get_job_logs` deliver it): metrics lines →
    metrics.jsonl, rank lines → cluster.json, the Trainer callback's marker → wrapper.json, the
    entry driver's stop by signals → `stopped_by`, the rest → stdout.log (without colour codes).

    `consumed` is an offset into Ray's log only: every delivery says where in that log it starts
    (`feed_at`), so a stream restarted after a blip, or the whole log fetched again, adds exactly
    what is new. The supervisor's own lines go through `note`, straight into stdout.log, never
    into the offset nor onto a half-read line. Exact repeats of a metrics line are dropped (Ray
    can forward a line twice when nodes share a host's log folder). The half-read line is bounded
    (`readers.lines`): a progress bar's redraws and a line too long to parse go through to
    stdout.log as they come."""

    def __init__(self, run: RunFolder, record: ClusterRecord) -> None:
        self.run = run
        self.record = record
        self.consumed = 0
        self.lines = lines.Lines("\n", passes=True)
        self.lock = threading.Lock()
        self.seen: deque[str] = deque(maxlen=4096)
        self.seen_set: set[str] = set()
        self.ranks: dict[str, dict[str, str]] = dict(record.ranks)
        self.stopped_by: str | None = None
        """The signal that ended a command after a stop (no Trainer callback ran), if one did."""

    def feed_at(self, offset: int, text: str) -> None:
        """`text` starts at `offset` of Ray's log: write the part not mirrored yet."""
        with self.lock:
            new = text[max(0, self.consumed - offset) :]
            if offset > self.consumed or not new:
                return  # a gap cannot happen (every delivery starts at 0); nothing new
            self.consumed += len(new)
            lines.deliver(self.lines.pieces(new), self._write, self._through)

    def feed_from(self, full: str) -> None:
        """The whole log (`get_job_logs`): whatever the stream has not delivered yet."""
        self.feed_at(0, full)

    def note(self, text: str) -> None:
        """One line of the supervisor's own (`[gaudi-tui] …`) in stdout.log."""
        with self.lock, self.run.log_path.open("a", encoding="utf-8") as fh:
            fh.write(f"[gaudi-tui] {text}\n")

    def flush_partial(self) -> None:
        with self.lock:
            if rest := self.lines.take():
                self._write([rest])

    def _through(self, text: str) -> None:
        """Part of a line that is not parsed (a bar's redraws, or past the limit), as it is."""
        with self.run.log_path.open("a", encoding="utf-8") as fh:
            fh.write(_ANSI.sub("", text))

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
            elif WRAPPER_PREFIX in line:
                payload = line.split(WRAPPER_PREFIX, 1)[1].strip()
                if _is_object(payload):
                    write_atomic(self.run.path / WRAPPER_MARKER, payload + "\n")
            elif STOPPED_PREFIX in line:
                self.stopped_by = _field(line.split(STOPPED_PREFIX, 1)[1], "signal") or "a signal"
            else:
                plain.append(line)
        if plain:
            with self.run.log_path.open("a", encoding="utf-8") as fh:
                fh.write("".join(p + "\n" for p in plain))
        if metrics:
            with self.run.metrics_path.open("a", encoding="utf-8") as fh:
                fh.write("".join(m + "\n" for m in metrics))

    def _rank(self, payload: str) -> None:
        info = _object(payload)
        rank = integer(info.get("rank"), lo=0) if info is not None else None
        if info is None or rank is None:
            return
        self.ranks[str(rank)] = {
            "node_id": text_of(info.get("node_id")) or "",
            "node_ip": text_of(info.get("node_ip")) or "",
        }


def _object(payload: str) -> dict | None:
    """A payload of the job's log as the JSON object it should be (untrusted.data: a NaN figure is
    None, nothing past 64 bits, no deep nesting, text), else None."""
    try:
        value = loads(payload, what="a line of the job's log", nonfinite=True)
    except Untrusted:
        return None
    return value if isinstance(value, dict) else None


def _field(payload: str, name: str) -> str | None:
    value = (_object(payload) or {}).get(name)
    return str(value) if value is not None else None


def _is_object(payload: str) -> bool:
    return _object(payload) is not None
