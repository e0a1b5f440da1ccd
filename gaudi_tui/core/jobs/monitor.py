"""Reading run folders while jobs write them: incremental metrics, bounded log tail, job summaries.

Everything here only reads, so any number of panels (or `gaudi-tui jobs`) can watch the same job.
Readers keep a byte offset and read only what was appended; a half-written last line waits for
the next poll.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec, SpecError
from gaudi_tui.core.jobs.status import ACTIVE, JobStatus, State, effective_state

ETA_WINDOW = 10
NO_METRICS_AFTER_S = 30.0
"""A command running this long with no metric found is listed as 'no metrics found'."""


@dataclass(frozen=True)
class LogPoint:
    """One `log` event of metrics.jsonl."""

    step: int
    time: float
    loss: float | None = None
    learning_rate: float | None = None
    grad_norm: float | None = None
    samples_per_s: float | None = None
    tokens_per_s: float | None = None
    memory_mib: float | None = None
    graph_compilations: int | None = None


def _num(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


OPEN_LINE_LIMIT = 64 * 1024
"""The most of a line without its end kept between reads (a binary dump, a bar drawn with \\b)."""


class AppendReader:
    """Complete new lines of a file that only grows (restarts from 0 if it shrinks). A line longer
    than `OPEN_LINE_LIMIT` before its end comes is kept to that (`_bounded`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def read_lines(self, max_bytes: int | None = None) -> tuple[list[str], int]:
        """New complete lines, and how many bytes were skipped to honour `max_bytes`."""
        try:
            size = self.path.stat().st_size
        except OSError:
            return [], 0
        if size < self.offset:
            self.offset, self.partial = 0, b""
        if size == self.offset:
            return [], 0
        skipped = 0
        if max_bytes is not None and size - self.offset > max_bytes:
            skipped = size - max_bytes - self.offset
            self.offset, self.partial = size - max_bytes, b""
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read(size - self.offset)
        except OSError:
            return [], 0
        self.offset += len(chunk)
        if skipped:
            chunk = chunk.split(b"\n", 1)[1] if b"\n" in chunk else b""  # drop the cut first line
        *complete, rest = chunk.split(b"\n")  # only the new bytes are searched
        if complete:
            complete[0], self.partial = self.partial + complete[0], rest
        else:
            self.partial += rest
        self.partial = _bounded(self.partial)
        # A progress bar redraws itself with \r: keep what a terminal would show, the last redraw.
        return [
            line.decode("utf-8", "replace").rstrip("\r").rsplit("\r", 1)[-1] for line in complete
        ], skipped


def _bounded(partial: bytes) -> bytes:
    """A line without its end yet, kept to `OPEN_LINE_LIMIT`: what follows its last \\r (the bar a
    terminal shows now), else its beginning."""
    if len(partial) <= OPEN_LINE_LIMIT:
        return partial
    redrawn = partial.rfind(b"\r")
    if redrawn >= 0 and len(partial) - redrawn - 1 <= OPEN_LINE_LIMIT:
        return partial[redrawn + 1 :]
    return partial[:OPEN_LINE_LIMIT]


class MetricsReader:
    """The events of metrics.jsonl. A `begin` (resume) drops points logged after its step."""

    def __init__(self, path: Path) -> None:
        self._reader = AppendReader(path)
        self.points: list[LogPoint] = []
        self.evals: list[tuple[int, float]] = []
        self.max_steps: int | None = None
        self.world_size: int | None = None
        self.begin_step = 0
        self.ended: dict | None = None
        self.summary: dict | None = None
        self.last_checkpoint: str | None = None
        self.events = 0
        """Events read so far (a command whose output matched nothing has none)."""

    def poll(self) -> bool:
        lines, _ = self._reader.read_lines()
        changed = False
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                self._apply(event)
                changed = True
        return changed

    def _apply(self, event: dict) -> None:
        self.events += 1
        kind = event.get("event")
        step = int(event.get("step") or 0)
        if isinstance(event.get("max_steps"), int):
            self.max_steps = event["max_steps"]
        if kind == "begin":
            self.begin_step = step
            self.points = [p for p in self.points if p.step <= step]
            self.evals = [e for e in self.evals if e[0] <= step]
            self.world_size = event.get("world_size")
            self.ended = None
        elif kind == "log":
            self.points.append(
                LogPoint(
                    step=step,
                    time=float(event.get("time") or 0.0),
                    loss=_num(event.get("loss")),
                    learning_rate=_num(event.get("learning_rate")),
                    grad_norm=_num(event.get("grad_norm")),
                    samples_per_s=_num(event.get("samples_per_s")),
                    tokens_per_s=_num(event.get("tokens_per_s")),
                    memory_mib=_num(event.get("memory_mib")),
                    graph_compilations=event.get("graph_compilations"),
                )
            )
        elif kind == "eval" and _num(event.get("eval_loss")) is not None:
            self.evals.append((step, float(event["eval_loss"])))
        elif kind == "save":
            self.last_checkpoint = event.get("checkpoint")
        elif kind == "summary":
            self.summary = event
        elif kind == "end":
            self.ended = event

    @property
    def step(self) -> int:
        if self.ended is not None:
            return int(self.ended.get("step") or 0)
        return self.points[-1].step if self.points else self.begin_step

    def seconds_per_step(self) -> float | None:
        """From the latest points of the current attempt (after its `begin`)."""
        recent = [p for p in self.points if p.step > self.begin_step][-ETA_WINDOW:]
        if len(recent) < 2 or recent[-1].step == recent[0].step:
            return None
        return (recent[-1].time - recent[0].time) / (recent[-1].step - recent[0].step)


def series(points: Iterable[LogPoint], name: str) -> tuple[list[float], list[float]]:
    """(steps, values) of one metric, skipping points that lack it."""
    xs: list[float] = []
    ys: list[float] = []
    for p in points:
        value = getattr(p, name)
        if value is not None:
            xs.append(float(p.step))
            ys.append(float(value))
    return xs, ys


def smooth(values: list[float], weight: float = 0.8) -> list[float]:
    """Debiased exponential moving average (TensorBoard's smoothing)."""
    out: list[float] = []
    last = 0.0
    for i, value in enumerate(values, start=1):
        last = last * weight + (1 - weight) * value
        out.append(last / (1 - weight**i))
    return out


@dataclass(frozen=True)
class JobView:
    """One row of the job list."""

    id: str
    name: str
    state: State
    elapsed_s: float
    step: int
    max_steps: int | None
    eta_s: float | None
    loss: float | None
    error: str | None
    attempt: int
    processes: int
    device: str
    stop_requested: bool = False
    checkpoint: str | None = None
    target: str = "local"
    where: str = ""
    """Ray jobs: cluster address, submission and Ray job id, nodes of the ranks."""
    kind: str = "trainer"
    metrics_found: bool | None = None
    """Commands: False once it has run a while (or ended) and no metric was found in its output."""

    def to_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class RunWatcher:
    """Follows one run folder."""

    def __init__(self, run: RunFolder) -> None:
        self.run = run
        self.metrics = MetricsReader(run.metrics_path)
        self.status: JobStatus | None = None
        self.spec: JobSpec | None = None
        self.spec_error: str | None = None
        self._status_mtime = -1.0

    def poll(self) -> bool:
        changed = self.metrics.poll()
        try:
            mtime = os.stat(self.run.status_path).st_mtime
        except OSError:
            mtime = -1.0
        if mtime != self._status_mtime:
            status = self.run.status()
            if status is not None:
                self.status, self._status_mtime, changed = status, mtime, True
        if self.spec is None and self.spec_error is None:
            try:
                self.spec = self.run.spec()
            except SpecError as exc:
                self.spec_error = str(exc)
        return changed

    def view(self, now: float) -> JobView:
        status = self.status or JobStatus()
        state = effective_state(status, now)
        spec = self.spec or JobSpec(name="(unreadable spec.toml)", max_steps=0)
        metrics = self.metrics
        max_steps = metrics.max_steps or (spec.max_steps or None)
        eta = None
        per_step = metrics.seconds_per_step()
        if state in ("running", "stopping") and per_step is not None and max_steps:
            eta = max(0.0, (max_steps - metrics.step) * per_step)
        losses = [p.loss for p in metrics.points if p.loss is not None]
        error = status.error or self.spec_error
        if state == "lost" and not error and spec.target == "ray":
            error = "the supervisor is gone; the job may still run on the cluster: r re-attaches"
        elif state == "lost" and not error:
            if any(r.alive() for r in (status.launcher, *status.workers) if r is not None):
                error = "the supervisor is gone but the job's processes still run: k kills them"
            else:
                error = (
                    "the supervisor is gone (machine rebooted or process killed): r resumes from a checkpoint"
                )
        return JobView(
            id=self.run.id,
            name=spec.name,
            state=state,
            elapsed_s=status.elapsed(now),
            step=metrics.step,
            max_steps=max_steps,
            eta_s=eta,
            loss=losses[-1] if losses else None,
            error=error,
            attempt=status.attempt,
            processes=spec.processes,
            device=spec.device,
            stop_requested=status.stop_requested or self.run.stop_requested(),
            checkpoint=metrics.last_checkpoint,
            target=spec.target,
            where=where(self.run, spec),
            kind=spec.kind,
            metrics_found=self._metrics_found(status, state, now) if _reads_output(spec) else None,
        )

    def _metrics_found(self, status: JobStatus, state: State, now: float) -> bool | None:
        if self.metrics.events:
            return True
        ran_a_while = status.started is not None and now - status.started >= NO_METRICS_AFTER_S
        return False if state not in ("queued",) and (ran_a_while or state not in ACTIVE) else None


def _reads_output(spec: JobSpec) -> bool:
    from gaudi_tui.core.jobs import kinds

    return kinds.for_spec(spec).metrics_from_output


def where(run: RunFolder, spec: JobSpec) -> str:
    """Where the job runs, as its target tells it ('' for this host)."""
    from gaudi_tui.core.jobs import targets

    return targets.for_spec(spec).where(run)


@dataclass
class Monitor:
    """Every run in the runs folder, discovered on each poll (so jobs started elsewhere appear)."""

    watchers: dict[str, RunWatcher] = field(default_factory=dict)

    def poll(self, now: float | None = None) -> list[JobView]:
        now = time.time() if now is None else now
        for run in runfolder.all_runs():
            if run.id not in self.watchers:
                self.watchers[run.id] = RunWatcher(run)
        for watcher in self.watchers.values():
            watcher.poll()
        return [w.view(now) for w in self.watchers.values()]


class LogTail:
    """The last `max_lines` lines of a growing log, reading at most `max_bytes` per poll.

    A job printing 10,000 lines/s costs one bounded read per poll, whatever it prints.
    """

    def __init__(self, path: Path, max_lines: int = 1000, max_bytes: int = 256 * 1024) -> None:
        self._reader = AppendReader(path)
        self.lines: deque[str] = deque(maxlen=max_lines)
        self.max_bytes = max_bytes
        self.skipped_bytes = 0

    def poll(self) -> list[str]:
        """New lines since the last poll (at most `max_lines` of them)."""
        new, skipped = self._reader.read_lines(self.max_bytes)
        self.skipped_bytes += skipped
        new = new[-(self.lines.maxlen or len(new)) :]
        self.lines.extend(new)
        return new


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
