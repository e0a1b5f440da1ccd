"""Follows a command's log as it grows and appends the metrics found in it to `metrics.jsonl`.

It runs in the supervisor (a thread) for commands, and for runs started by hand (`log_file`). Once
the panel's Trainer callback runs in this attempt (`wrapper.json`), the callback writes the metrics
with Trainer's own step and the follower writes nothing more. Reads are bounded (`MAX_READ` per
poll); bytes are decoded incrementally, so a character split between two reads stays whole. A line
longer than `readers.lines.LIMIT` is read for metrics up to there; the supervisor's log
(supervisor.log in the run folder) says so, once per line.

A supervisor that re-attaches to a job whose ranks ran on (Slurm) reads the attempt's output again
from its start (`skip_recorded`): the events an earlier follower of the attempt wrote are counted
in metrics.jsonl and not written again, so every metric printed while no supervisor ran is recorded
once, with the step the whole output gives it (the `compile` events a plain loop's wrapper appends to
the same file are not the follower's, and not counted).
"""

from __future__ import annotations

import codecs
import json
import sys
import threading
from pathlib import Path

from gaudi_tui.core.insight import compiles
from gaudi_tui.core.jobs.kinds.command import wrapper_active
from gaudi_tui.core.jobs.readers import Event, OutputMetrics
from gaudi_tui.core.jobs.readers.lines import LIMIT
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec

POLL_S = 0.25
QUIET_S = 1.0
"""Output quiet this long: read the progress bar being drawn (metrics wait for it)."""
MAX_READ = 4 * 1024 * 1024
JOB_LINE = b'{"event":"' + compiles.EVENT.encode() + b'",'
"""How a line the job's own process appended begins (`worker/loop_watch.py`, through `sinks.FileSink`)."""


class OutputFollower:
    def __init__(
        self,
        run: RunFolder,
        spec: JobSpec,
        log: Path,
        *,
        offset: int | None = None,
        begin_step: int = 0,
        resumed_from: str | None = None,
    ) -> None:
        self.run = run
        self.log = log
        self.metrics = OutputMetrics(
            spec.metrics_source,
            spec.metrics_pattern,
            world_size=spec.processes,
            device=spec.device,
            resumed_from=resumed_from,
            begin_step=begin_step,
            on_cut=self._say_cut,
        )
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        try:
            self.offset = log.stat().st_size if offset is None else offset  # None: from its end now
        except OSError:
            self.offset = 0
        self.muted = False
        self.skip = 0
        """Events of this attempt already in metrics.jsonl: read again, not written again."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._quiet = 0.0

    def skip_recorded(self, metrics_base: int) -> None:
        """The output is read again from the attempt's start: the events written after
        `metrics_base` (by the followers before this one) are not written again. A line cut by a
        follower that died while writing it is dropped (it is written whole again)."""
        trim = not wrapper_active(self.run)  # else rank 0's callback writes there too
        self.skip = _complete_lines_after(self.run.metrics_path, metrics_base, trim)

    def _say_cut(self, head: str) -> None:
        print(
            f"[gaudi-tui] {self.log}: a line went past {LIMIT // 1024} KiB without a line end "
            f"(it begins {head!r}); the rest of it is not read for metrics",
            file=sys.stderr,
            flush=True,
        )

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="command-output", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            if self.poll():
                self._quiet = 0.0
            else:
                self._quiet += POLL_S
                if self._quiet >= QUIET_S:
                    self._write(self.metrics.settle())

    def poll(self) -> bool:
        """Read what was appended (bounded); True when there was something."""
        try:
            with self.log.open("rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read(MAX_READ)
        except OSError:
            return False
        if not chunk:
            return False
        self.offset += len(chunk)
        self._write(self.metrics.feed(self.decoder.decode(chunk)))
        return True

    def _write(self, events: list[Event]) -> None:
        if self.skip and events:
            dropped = min(self.skip, len(events))
            events, self.skip = events[dropped:], self.skip - dropped
        if not events:
            return
        if not self.muted and wrapper_active(self.run):
            self.muted = True  # Trainer's callback writes the metrics from now on
        if self.muted:
            return
        text = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events)
        with self.run.metrics_path.open("a", encoding="utf-8") as out:
            out.write(text)

    def close(self, stopped: bool) -> None:
        """Read the rest, give out what waits, and end the attempt's metrics (when any were found)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        while self.poll():
            pass
        tail = self.decoder.decode(b"", final=True)
        events = self.metrics.feed(tail) + self.metrics.flush()
        if self.metrics.found or events:
            events.append(self.metrics.end(stopped))
        self._write(events)

    @property
    def found(self) -> int:
        return self.metrics.found


def _complete_lines_after(path: Path, base: int, trim: bool) -> int:
    """Complete lines of `path` after byte `base` that a follower wrote (read a line at a time, at most
    MAX_READ at once; the `compile` events the wrapper's loop watch appends from the job itself are not
    counted); with `trim`, a last line without its end is cut off the file."""
    count, end = 0, base
    try:
        with path.open("rb") as fh:
            fh.seek(base)
            while line := fh.readline(MAX_READ):
                if line.endswith(b"\n"):
                    end = fh.tell()
                    count += not line.startswith(JOB_LINE)
        if trim and path.stat().st_size > end:
            with path.open("r+b") as fh:
                fh.truncate(end)
    except OSError:
        pass
    return count
