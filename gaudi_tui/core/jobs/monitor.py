"""Reading run folders while jobs write them: the job list's rows (the files a job appends to are
read by `tailing.py`).

Everything here only reads, so any number of panels (or `gaudi-tui jobs`) can watch the same job.
Readers keep a byte offset and read only what was appended; a half-written last line waits for
the next poll. The job list reads each run's metrics through a `SummaryReader` (constant memory,
from the end of the file), lists the runs folder again only when it changed, and does not read a
finished run again until its folder changes.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from gaudi_tui.core.jobs import index, runfolder
from gaudi_tui.core.jobs.liveness import current
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec, SpecError
from gaudi_tui.core.jobs.status import ACTIVE, JobStatus, State
from gaudi_tui.core.jobs.summary import SummaryReader

log = logging.getLogger(__name__)
T = TypeVar("T")
SETTLED: tuple[State, ...] = ("succeeded", "failed", "stopped", "cancelled")
"""Stored states after which a run's row changes only when something is written into its folder."""
SETTLED_EVERY = 10
NO_METRICS_AFTER_S = 30.0
"""A command running this long with no metric found is listed as 'no metrics found'."""


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
    """Follows one run folder. A settled run (ended, its folder unchanged) keeps its row, the same
    object, with the stamp it was read at; `seed` is such a row from the index."""

    def __init__(self, run: RunFolder, seed: tuple[index.Stamp, JobView] | None = None) -> None:
        self.run = run
        self.summary = SummaryReader(run.metrics_path)
        self.status: JobStatus | None = None
        self.spec: JobSpec | None = None
        """The whole spec, once something asked for it (load_spec); the row needs only row_spec."""
        self.row_spec: JobSpec | None = None
        self.spec_error: str | None = None
        self._status_mtime = -1.0
        self.stamp: index.Stamp | None = seed[0] if seed else None
        self.settled_view: JobView | None = seed[1] if seed else None
        self.failure: str | None = None
        """Why the last poll or row of this run raised (its row says it); None when it did not."""
        self.said: str | None = None
        """The failure last logged: a run that keeps failing alike is logged once."""

    def poll(self) -> bool:
        self.failure = None
        if self.settled_view is not None and self.stamp is not None:
            try:
                if os.stat(self.run.path).st_mtime_ns == self.stamp[0]:
                    return False
            except OSError:
                pass
        self.stamp, self.settled_view = index.stamp(self.run), None
        changed = False
        try:
            mtime = os.stat(self.run.status_path).st_mtime
        except OSError:
            mtime = -1.0
        if mtime != self._status_mtime:
            status = self.run.status()
            if status is not None:
                self.status, self._status_mtime, changed = status, mtime, True
        if self.row_spec is None and self.spec is None and self.spec_error is None:
            try:
                self.row_spec = self.run.row_spec()  # not the whole spec: 1,000 rows at a first start
            except SpecError as exc:
                self.spec_error = str(exc)
        return self.summary.poll() or changed  # last: a metrics file that raises leaves the rest known

    def load_spec(self) -> JobSpec | None:
        """The spec, read once (a row from the index has not read it)."""
        if self.spec is None and self.spec_error is None:
            try:
                self.spec = self.run.spec()
            except SpecError as exc:
                self.spec_error = str(exc)
        return self.spec

    def row(self) -> tuple[index.Stamp, JobView] | None:
        """The settled row and its stamp, for the index."""
        return (self.stamp, self.settled_view) if self.stamp and self.settled_view else None

    def view(self, now: float) -> JobView:
        """The row; the same object while the run is settled."""
        if self.settled_view is not None:
            return self.settled_view
        view = self._make_view(now)
        if self.status is not None and self.status.state in SETTLED and self.failure is None:
            self.settled_view = view
        return view

    def failed_view(self) -> JobView:
        """The row of a run whose reading raised: what is known of it, and why the rest is not."""
        status = self.status or JobStatus()
        spec = self.spec or self.row_spec
        return JobView(
            id=self.run.id,
            name=spec.name if spec is not None else self.run.id,
            state=status.state,
            elapsed_s=0.0,
            step=0,
            max_steps=None,
            eta_s=None,
            loss=None,
            error=self.failure,
            attempt=status.attempt,
            processes=spec.processes if spec is not None else 1,
            device=spec.device if spec is not None else "",
        )

    def _make_view(self, now: float) -> JobView:
        # A supervisor found gone may have written its last status since the poll: read it again.
        status, state = current(self.run.status_path, self.status or JobStatus(), now)
        if self.status is not None or status != JobStatus():
            self.status = status
        spec = self.spec or self.row_spec or JobSpec(name="(unreadable spec.toml)", max_steps=0)
        metrics = self.summary.summary
        max_steps = metrics.max_steps or (spec.max_steps or None)
        eta = None
        if (
            state in ("running", "stopping")
            and max_steps
            and (per_step := metrics.seconds_per_step()) is not None
        ):
            eta = max(0.0, (max_steps - metrics.step) * per_step)  # only then: a rate parses the ETA's lines
        error = self.failure or status.error or self.spec_error
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
            loss=metrics.loss,
            error=error,
            attempt=status.attempt,
            processes=spec.processes,
            device=spec.device,
            stop_requested=status.stop_requested or self.run.stop_requested(),
            checkpoint=metrics.checkpoint,
            target=spec.target,
            where=where(self.run, spec, active=state in ACTIVE),
            kind=spec.kind,
            metrics_found=self._metrics_found(status, state, now) if _reads_output(spec) else None,
        )

    def _metrics_found(self, status: JobStatus, state: State, now: float) -> bool | None:
        if self.summary.summary.found:
            return True
        ran_a_while = status.started is not None and now - status.started >= NO_METRICS_AFTER_S
        return False if state not in ("queued",) and (ran_a_while or state not in ACTIVE) else None


def _reads_output(spec: JobSpec) -> bool:
    from gaudi_tui.core.jobs import kinds

    return kinds.for_spec(spec).metrics_from_output


def where(run: RunFolder, spec: JobSpec, active: bool = False) -> str:
    """Where the job runs, as its target tells it ('' for this host), and while it is `active` what
    its kind adds (a server's warm-up or address)."""
    from gaudi_tui.core.jobs import kinds, targets

    said = targets.for_spec(spec).where(run)
    note = kinds.for_spec(spec).note(run) if active else ""
    return " · ".join(p for p in (said, note) if p)


@dataclass
class Monitor:
    """Every run in the runs folder, discovered on each poll (so jobs started elsewhere appear). A
    settled run's folder is checked at one poll in SETTLED_EVERY (rolling), the `eager` run's at each;
    settled rows are kept in the index (core/jobs/index.py) for the next start."""

    watchers: dict[str, RunWatcher] = field(default_factory=dict)
    _listed: tuple[int, bool] | None = None
    """The runs folder's mtime when it was last listed, and whether a folder in it had no status yet."""
    _seeds: dict[str, tuple[index.Stamp, JobView]] | None = None
    _saved: dict[str, JobView | None] = field(default_factory=dict)  # the rows in the index
    _polls: int = 0

    def poll(self, now: float | None = None, eager: str | None = None) -> list[JobView]:
        now = time.time() if now is None else now
        self._discover()
        turn = self._polls % SETTLED_EVERY
        self._polls += 1
        polled = [
            w
            for i, (run_id, w) in enumerate(self.watchers.items())
            if w.settled_view is None or i % SETTLED_EVERY == turn or run_id == eager
        ]
        for watcher in polled:
            self._guarded(watcher, watcher.poll)
        views = [self._guarded(w, partial(w.view, now)) or w.failed_view() for w in self.watchers.values()]
        if any(self._saved.get(w.run.id) is not w.settled_view for w in polled):
            self._keep()
        return views

    def _guarded(self, watcher: RunWatcher, read: Callable[[], T]) -> T | None:
        """`read()` for one run; what it raises is that run's `failure` (logged once, shown in its
        row), and the other runs are read on."""
        try:
            value = read()
        except Exception as exc:  # one run's bad file must not stop the list
            failure = f"cannot read this run: {type(exc).__name__}: {exc}"[:300]
            if failure != watcher.said:
                log.exception("job list: cannot read run %s", watcher.run.id)
            watcher.failure = watcher.said = failure
            watcher.settled_view = None
            return None
        return value

    def _discover(self) -> None:
        """Add the new run folders (oldest first); the runs folder is listed again only when an entry
        was added or removed in it, or a folder in it was still waiting for its status.json."""
        root = runfolder.runs_dir()
        try:
            mtime = os.stat(root).st_mtime_ns
            if self._listed is not None and self._listed == (mtime, False):
                return
            names = sorted(e.name for e in os.scandir(root) if e.is_dir() and e.name not in self.watchers)
        except OSError:
            return
        if self._seeds is None:
            self._seeds = index.load(tuple(JobView.__dataclass_fields__), JobView)
        waiting = False
        for name in names:
            run = RunFolder(root / name)
            seed = self._seeds.get(str(run.path))
            if seed is not None and seed[0] == index.stamp(run):
                self.watchers[name] = RunWatcher(run, seed)
                self._saved[name] = seed[1]
            elif run.status_path.exists():
                self.watchers[name] = RunWatcher(run)
            else:
                waiting = True
        self._listed = (mtime, waiting)

    def _keep(self) -> None:
        """Write the index (a settled row is new or changed, or a run is no longer settled)."""
        rows = {
            str(w.run.path): (row[0], row[1].to_dict()) for w in self.watchers.values() if (row := w.row())
        }
        index.save(rows, tuple(JobView.__dataclass_fields__))
        self._saved = {w.run.id: w.settled_view for w in self.watchers.values()}


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
