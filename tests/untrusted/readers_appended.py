"""The catalogue's readers of files a job or the panel appends to: metrics.jsonl (its four readers
and its end event), the log tail, Intel's runtime file, the notifications file, a `command` job's
output readers, and the Ray and Slurm followers of a job's output."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from gaudi_tui.core.alerts.store import NotificationReader
from gaudi_tui.core.insight.runtime import MetricsTail
from gaudi_tui.core.jobs import outcome
from gaudi_tui.core.jobs.insight.points import Points
from gaudi_tui.core.jobs.readers import Reader as LineReader
from gaudi_tui.core.jobs.readers.jsonl import JsonReader
from gaudi_tui.core.jobs.readers.trainer import TrainerLogReader
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.series import ChartSeries
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus
from gaudi_tui.core.jobs.summary import SummaryReader, lines_end
from gaudi_tui.core.jobs.tailing import LogTail, MetricsReader
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.targets.ray.mirror import LogMirror
from gaudi_tui.core.jobs.targets.ray.record import ClusterRecord
from gaudi_tui.core.jobs.targets.slurm.record import SlurmRecord
from gaudi_tui.core.jobs.targets.slurm.supervise import Follow
from gaudi_tui.core.jobs.worker.logstream import METRIC_PREFIX, RANK_PREFIX
from gaudi_tui.core.serve.ready import ReadyWatch
from gaudi_tui.core.slurm.cli import Slurm
from tests.untrusted.cases import CHUNK
from tests.untrusted.reader_model import END, LOADING_POLLS, LOG, Poller, Reader, Seen, lines_of, once


def _metrics_reader(path: Path) -> Poller:
    reader = MetricsReader(path)

    def poll() -> Seen:
        reader.poll()
        return Seen([p.step for p in reader.points], reader.skipped)

    return poll


def _summary(path: Path) -> Poller:
    reader = SummaryReader(path)

    def poll() -> Seen:
        reader.poll()
        return Seen([reader.summary.step] if reader.summary.found else [])

    return poll


def _charts(path: Path) -> Poller:
    charts = ChartSeries(path, cache=False)

    def poll() -> Seen:
        for _ in range(LOADING_POLLS):  # as the Training screen polls while a history loads
            if not (charts.poll() or charts.behind):
                return Seen(list(charts.data().lines["loss"][0]), charts.skipped)
        raise AssertionError(f"still loading after {LOADING_POLLS} polls: {charts.behind} bytes behind")

    return poll


def _points(path: Path) -> Seen:
    points = Points()
    try:
        with path.open("rb") as fh:
            points.read_back(fh, lines_end(fh, os.fstat(fh.fileno()).st_size))
    except FileNotFoundError:
        return Seen([])
    return Seen([p.step for p in points.points])


def _ended(path: Path) -> Seen:
    event = outcome.last_end_event(path)
    return Seen([event["step"]] if event else [])


def _log_tail(path: Path) -> Poller:
    tail = LogTail(path)
    return lambda: (tail.poll(), Seen(list(tail.lines), tail.skipped_bytes))[1]


def _runtime(path: Path) -> Poller:
    tail = MetricsTail(path, max_bytes=4 << 20)

    def poll() -> Seen:
        for _ in range(LOADING_POLLS):
            if not (tail.poll() or tail.offset < tail.size):
                break
        # an object read whose count is not a number: the panel shows that figure as unknown
        unknown = tail.metrics.objects - len(tail.metrics.compiles)
        return Seen([c.total for c in tail.metrics.compiles], tail.skipped + unknown)

    return poll


GC = b'{"metric_name": "graph_compilation", "statistics": {"TotalNumber": @, "TotalTime": 10}}'
GC_TEXT = b"Metric name: graph_compilation\n\tTotalNumber: @\n\tTotalTime: 10\n"


ALERT = b'{"kind": "job_ended", "severity": "info", "subject": "run-1", "title": "T", "text": "x", "key": "k", "time": @}'


def _alerts(path: Path) -> Poller:
    """The panel's and `watch`'s follower of the notifications file (one alert a line)."""
    reader = NotificationReader(path, from_start=True)
    seen: list[object] = []

    def poll() -> Seen:
        seen.extend(alert.time for alert in reader.poll())
        return Seen(list(seen))

    return poll


def _output(make: Callable[[], LineReader]) -> Callable[[Path], Poller]:
    """A `command` job's output through its metrics reader (`--metrics json`, `trainer`), a line at a
    time as the supervisor hands it over; any line that is not metrics is the job's log."""

    def open_(path: Path) -> Poller:
        reader, tail = make(), LogTail(path)

        def poll() -> Seen:
            events = [e for line in tail.poll() for e in reader.segment(line)]
            seen.extend(e["step"] for e in events if "step" in e)
            return Seen(list(seen))

        seen: list[object] = []
        return poll

    return open_


def _mirror(path: Path) -> Poller:
    """A Ray job's log as the stream delivers it, a MiB at a time, through LogMirror: its metrics
    lines land in metrics.jsonl (read back as the Training detail does), its rank lines in `ranks`."""
    run = RunFolder(path.parent / "run")
    run.path.mkdir(exist_ok=True)
    mirror = LogMirror(run, ClusterRecord("http://h:8265", "s", 1))
    metrics = MetricsReader(run.metrics_path)

    def poll() -> Seen:
        offset = 0
        with path.open("rb") as fh:
            while chunk := fh.read(CHUNK):
                text = chunk.decode("utf-8", "replace")
                mirror.feed_at(offset, text)
                offset += len(text)
        metrics.poll()
        ranks = [int(rank) for rank in mirror.ranks]
        return Seen([p.step for p in metrics.points] + ranks)  # passed on: metrics.jsonl counts

    return poll


BAR = b" 10%|#         | @/100 [00:01<00:09,  1.00it/s]"


def _slurm_output(path: Path) -> Poller:
    """A Slurm job's output as the supervisor follows it (its rank lines to slurm.json)."""
    run = RunFolder(path.parent.parent)
    attempt = Attempt(run, JobSpec(), None, False, threading.Event(), lambda **_: None, JobStatus)
    follow = Follow(attempt, SlurmRecord(attempt=1, job_name="j", script="s", job_id=12), Slurm())

    def poll() -> Seen:
        while follow.tail():
            pass
        return Seen([int(rank) for rank in follow.record.ranks])  # any other line is the job's log

    return poll


RANK = RANK_PREFIX.encode() + b'{"rank": @, "node": "n"}'


def _warmup(path: Path) -> Poller:
    """vLLM's log as the serve readiness watch follows it (a bounded read a poll, each new line into
    the warm-up reader): the counts it took, and the words the Serve row then shows."""
    watch = ReadyWatch(path.parent, path, {"url": "", "model": "m"}, None)
    seen: list[object] = []

    def poll() -> Seen:
        for _ in range(LOADING_POLLS):
            changed = watch.follow(100.0 + len(seen))
            state = watch.warmup.state
            if changed:
                seen.append(state.finished_s if state.finished_s is not None else state.done)
            if not watch.reader.behind:
                break
        return Seen([*seen, watch.info["warmup"]])  # any other line is the server's log

    return poll


WARMUP = b"(VllmWorker) INFO 12-06 20:01:02 [Warmup][Prompt][@/24] free_mem: 55.43 GiB"
FINISHED = b"INFO 12-06 20:03:00 Warmup finished in @ secs, allocated 1.2 GiB"

APPENDED: dict[str, Reader] = {
    "metrics.jsonl: Training detail": Reader(
        "metrics.jsonl", LOG, _metrics_reader, before=lines_of(LOG, 1, 2), after=lines_of(LOG, 4, 5),
        keeps=frozenset({1, 2, 4, 5}), keeps_whole=frozenset({1, 2}),
    ),
    "metrics.jsonl: job list summary": Reader(
        "metrics.jsonl", LOG, _summary, before=lines_of(LOG, 1, 2), after=lines_of(LOG, 4, 5),
        keeps=frozenset({5}), keeps_whole=frozenset({2}),
    ),
    "metrics.jsonl: chart series": Reader(
        "metrics.jsonl", LOG, _charts, before=lines_of(LOG, 1, 2), after=lines_of(LOG, 4, 5),
        keeps=frozenset({1.0, 2.0, 4.0, 5.0}), keeps_whole=frozenset({1.0, 2.0}), new=9.0,
    ),
    "metrics.jsonl: insight points": Reader(
        "metrics.jsonl", LOG, once(_points), before=lines_of(LOG, 1, 2), after=lines_of(LOG, 4, 5),
        keeps=frozenset({1, 2, 4, 5}), keeps_whole=frozenset({1, 2}),
    ),
    "metrics.jsonl: end event": Reader(
        "metrics.jsonl", END, once(_ended), before=lines_of(LOG, 1, 2), after=lines_of(END, 5),
        keeps=frozenset({5}),
    ),
    "stdout.log: log tail": Reader(
        "stdout.log", b"line @", _log_tail, before=b"line 1\nline 2\n", after=b"line 4\n",
        keeps=frozenset({"line 1", "line 2", "line 4"}), new="line 9",  # a tail: 100 MiB pass its lines, counted
    ),
    "runtime metrics file (JSON)": Reader(
        "hpu_metrics.json", GC, _runtime, before=b"[" + GC.replace(b"@", b"1") + b",\n",
        after=b",\n" + GC.replace(b"@", b"4") + b"\n]", keeps=frozenset({1, 4}), keeps_whole=frozenset({1}),
        then=b",\n",
    ),
    "runtime metrics file (text)": Reader(
        "hpu_metrics.txt", GC_TEXT, _runtime, before=GC_TEXT.replace(b"@", b"1") + b"\n",
        after=b"\n" + GC_TEXT.replace(b"@", b"4") + b"\n", keeps=frozenset({1, 4}), keeps_whole=frozenset({1}),
    ),
    "notifications.jsonl": Reader(
        "notifications.jsonl", ALERT, _alerts, before=lines_of(ALERT, 1, 2), after=lines_of(ALERT, 4),
        keeps=frozenset({1, 2, 4}), keeps_whole=frozenset({1, 2}),
    ),
    "command kind: JSON metrics lines": Reader(
        "stdout.log", b'{"step": @, "loss": 0.5}', _output(JsonReader), before=b'{"step": 1, "loss": 1}\n{"step": 2, "loss": 1}\n',
        after=b'{"step": 4, "loss": 0.25}\n', keeps=frozenset({1, 2, 4}),  # a tail: 100 MiB pass them
    ),
    "command kind: trainer bars": Reader(
        "stdout.log", BAR, _output(TrainerLogReader), before=lines_of(BAR, 1, 2), after=lines_of(BAR, 4),
        keeps=frozenset({1, 2, 4}),  # a tail: 100 MiB pass them
    ),
    "Ray log mirror: metrics": Reader(
        "ray.log", METRIC_PREFIX.encode() + LOG, _mirror,
        before=lines_of(METRIC_PREFIX.encode() + LOG, 1, 2), after=lines_of(METRIC_PREFIX.encode() + LOG, 4),
        keeps=frozenset({1, 2, 4}), keeps_whole=frozenset({1, 2}),
    ),
    "Ray log mirror: ranks": Reader(
        "ray.log", RANK_PREFIX.encode() + b'{"rank": @, "node_id": "n", "node_ip": "10.0.0.1"}', _mirror,
        before=RANK_PREFIX.encode() + b'{"rank": 1, "node_id": "n"}\n',
        after=RANK_PREFIX.encode() + b'{"rank": 4, "node_id": "n"}\n', keeps=frozenset({1, 4}),
        keeps_whole=frozenset({1}),
    ),
    "serve log: warm-up buckets": Reader(
        "vllm.log", WARMUP, _warmup, before=lines_of(WARMUP, 1, 2), after=lines_of(WARMUP, 4),
        keeps=frozenset({4}), keeps_whole=frozenset({2}),  # the latest count of what one poll read
    ),
    "serve log: warm-up finished": Reader(
        "vllm.log", FINISHED, _warmup, before=lines_of(WARMUP, 1, 2), after=lines_of(FINISHED, 4),
        keeps=frozenset({4.0}), keeps_whole=frozenset({2}),
    ),
    "Slurm job output: ranks": Reader(
        "slurm/job-12.out", RANK, _slurm_output, before=lines_of(RANK, 1, 2), after=lines_of(RANK, 4),
        keeps=frozenset({1, 2, 4}), keeps_whole=frozenset({1, 2}),
    ),
}  # fmt: skip
