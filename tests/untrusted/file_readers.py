"""The readers of the hostile-file catalogue (tests/untrusted/test_hostile_files.py): each reader of
a file another process writes, as its caller reads it, with a good item to put the hostile cases
in. `Reader.open(path)` gives a poll that returns `Seen`: the values of the items read and what the
reader said of what it passed over."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gaudi_tui.core.alerts.store import NotificationReader
from gaudi_tui.core.chat import run_answer
from gaudi_tui.core.devices.parsers import detect
from gaudi_tui.core.insight import profile
from gaudi_tui.core.insight.runtime import MetricsTail
from gaudi_tui.core.jobs import index, outcome, series_cache, spec, status
from gaudi_tui.core.jobs.insight.points import Points
from gaudi_tui.core.jobs.kinds import command
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
from gaudi_tui.core.jobs.targets.ray import record as ray_record
from gaudi_tui.core.jobs.targets.ray.mirror import LogMirror
from gaudi_tui.core.jobs.targets.ray.record import ClusterRecord
from gaudi_tui.core.jobs.targets.slurm import record as slurm_record
from gaudi_tui.core.jobs.targets.slurm.record import SlurmRecord
from gaudi_tui.core.jobs.targets.slurm.supervise import Follow
from gaudi_tui.core.jobs.worker.logstream import METRIC_PREFIX, RANK_PREFIX
from gaudi_tui.core.serve import node, ready
from gaudi_tui.core.slurm import poll, queue_text
from gaudi_tui.core.slurm.cli import Slurm, SlurmError, answered
from gaudi_tui.core.slurm.model import nodes_from_json
from gaudi_tui.core.untrusted.data import loads
from tests.untrusted.cases import CHUNK


@dataclass(frozen=True)
class Seen:
    """What a reader gave: the values of the items it read, and what it said of what it passed over
    (truthy: counted, refused or "unreadable"; None: this reader shows only the latest item)."""

    values: list[object]
    said: object = None


Poller = Callable[[], Seen]


@dataclass(frozen=True)
class Reader:
    """One reader. `item`: one item with `@` where a value goes; `good`: that value in a good item;
    `before`/`after`: good items around the hostile one in the same file; `keeps`: the values of
    those that must still be read (`keeps_whole`: when a whole case replaces the last item);
    `open(path)`: a poll of the file as its caller polls it (a fresh reader each time for a caller
    that reads once); `errors`: what the caller catches."""

    file: str
    item: bytes
    open: Callable[[Path], Poller]
    good: bytes = b"7"
    before: bytes = b""
    after: bytes = b""
    keeps: frozenset[object] = frozenset()
    keeps_whole: frozenset[object] = frozenset()
    errors: tuple[type[BaseException], ...] = ()
    new: object = 9
    """What the reader gives of a new good item of value 9, after the file shrank or vanished."""
    then: bytes = b"\n"
    """What a writer puts before its next item after a cut (the end of the line it was cut in)."""
    prepare: Callable[[Path, Reader], Reader] | None = field(default=None, compare=False)
    """Makes the reader's item for its folder (a cache keyed by the file it is of)."""

    def fill(self, value: bytes) -> bytes:
        return self.item.replace(b"@", value)


def _once(read: Callable[[Path], Seen]) -> Callable[[Path], Poller]:
    return lambda path: lambda: read(path)


# ---- metrics.jsonl and the other files a job appends to --------------------------------------------


def _lines(template: bytes, *steps: int) -> bytes:
    return b"".join(template.replace(b"@", b"%d" % s) + b"\n" for s in steps)


LOADING_POLLS = 1000
"""More polls than a 100 MiB file takes in slices: a reader still behind after them spins."""
LOG = b'{"event":"log","step":@,"time":1.5,"loss":0.5}'
END = b'{"event":"end","step":@,"state":"succeeded"}'


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

# ---- documents: one item a file, or a list of items in one document -----------------------------------


def _run(path: Path) -> RunFolder:
    return RunFolder(path.parent)


def _record(read: Callable[[Path], object], value: Callable[[object], object]) -> Callable[[Path], Poller]:
    """A reader of one record a file: its value, or "unreadable" (None) said."""

    def seen(path: Path) -> Seen:
        got = read(path)
        return Seen([value(got)] if got is not None else [], got is None)

    return _once(seen)


def _spec(path: Path) -> Seen:
    try:
        return Seen([spec.load(path).max_steps])
    except spec.SpecError as exc:
        return Seen([], exc)


def _index_file(_: Path) -> Path:
    return index.index_path()


@dataclass(frozen=True)
class Row:
    """A row of the index, as the job list's JobView is one."""

    step: int


def _index(path: Path) -> Seen:
    rows = index.load(("step",), Row)
    return Seen([row.step for _, row in rows.values()], not rows)


def _cache_of(folder: Path) -> Path:
    return folder / "metrics.jsonl"


def _cache_item(folder: Path, reader: Reader) -> Reader:
    """A cache of a real metrics.jsonl as `series_cache.save` writes it, its offset the value."""
    metrics = _cache_of(folder)
    metrics.write_bytes(_lines(LOG, 1, 2, 3, 4, 5, 6, 7))
    offset = len(_lines(LOG, 1, 2, 3, 4, 5, 6))
    series_cache.save(metrics, ("loss",), {"offset": offset, "ema": [0.5, 1], "lines": {}})
    saved = series_cache.cache_path(metrics, ("loss",)).read_bytes()
    item = saved.replace(b'"offset":%d' % offset, b'"offset":@')
    assert item != saved, saved[:200]
    return Reader(**{**reader.__dict__, "item": item, "good": b"%d" % offset, "prepare": None})


def _cache(path: Path) -> Seen:
    state = series_cache.load(_cache_of(path.parent), ("loss",))
    return Seen([state["offset"]] if state else [], state is None)


def _snapshot(path: Path) -> Seen:
    snap = poll._read(path)
    return Seen([snap.taken] if snap else [], snap is None)


def _squeue_item() -> bytes:
    """`squeue --json` as Slurm 22.05 prints it (indented by two: queue_text splits it job by job),
    three jobs, the middle one's id the value."""
    jobs = [{"job_id": f"@{n}", "name": f"j{n}", "user_name": "u", "job_state": "RUNNING"} for n in (1, 2, 3)]
    text = json.dumps({"meta": {}, "errors": [], "jobs": jobs}, indent=2).encode()
    return text.replace(b'"@1"', b"101").replace(b'"@2"', b"@").replace(b'"@3"', b"103")


def _squeue(path: Path) -> Seen:
    try:
        return Seen(
            [job.job_id for job in queue_text.jobs_from_text(path.read_bytes().decode("utf-8", "replace"))]
        )
    except SlurmError as exc:
        return Seen([], exc)


SINFO = (
    json.dumps(
        {
            "errors": [],
            "nodes": [{"name": "n1", "cpus": 8}, {"name": "n2", "cpus": "@"}, {"name": "n3", "cpus": 8}],
        }
    )
    .encode()
    .replace(b'"@"', b"@")
)


def _sinfo(path: Path) -> Seen:
    """What `Slurm.sinfo` then `model.nodes_from_json` make of the answer."""
    try:
        data = answered(loads(path.read_bytes(), what="`sinfo --json`"), "sinfo", "the nodes")
    except ValueError as exc:  # Slurm.json's own refusal of what is not JSON
        return Seen([], exc)
    return Seen([(n.name, n.cpus) for n in nodes_from_json(data)])


CSV = (
    b"name, uuid, power.draw [W], temperature.aip [C], utilization.aip [%], memory.used [MiB], memory.total [MiB]\n"
    b"HL-205, u0, 100, 36, 15, 512, 32768\nHL-205, u1, @, 34, 15, 512, 32768\n"
    b"HL-205, u2, 96, 33, 12, 512, 32768\n"
)


def _hl_smi(path: Path) -> Seen:
    try:
        reading = detect.read_inputs([str(path)])
    except detect.InputError as exc:
        return Seen([], exc)
    return Seen([d.power_draw_w for d in reading.devices], reading.errors)


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


def _marker(path: Path) -> Seen:
    """Where a `command` job's Trainer said it saves (the wrapper's marker in the run folder)."""
    folder = command.output_folder(_run(path), JobSpec(kind="command", command=("python", "t.py")))
    return Seen([str(folder)] if folder else [], folder is None)


def _shards(path: Path) -> Seen:
    """Whether a folder holds a whole sharded model, by its index (Chat's run answer)."""
    (path.parent / "a.safetensors").write_bytes(b"")
    whole = run_answer.weights_whole(path.parent)
    return Seen([whole] if whole else [], not whole)


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


def _profile(path: Path) -> Seen:
    """What the job reads of a profile request between two steps (and the panel says of it)."""
    try:
        return Seen([profile.asked_steps(path)])
    except (OSError, ValueError) as exc:
        return Seen([], exc)


RANK = RANK_PREFIX.encode() + b'{"rank": @, "node": "n"}'

READERS: dict[str, Reader] = {
    "metrics.jsonl: Training detail": Reader(
        "metrics.jsonl", LOG, _metrics_reader, before=_lines(LOG, 1, 2), after=_lines(LOG, 4, 5),
        keeps=frozenset({1, 2, 4, 5}), keeps_whole=frozenset({1, 2}),
    ),
    "metrics.jsonl: job list summary": Reader(
        "metrics.jsonl", LOG, _summary, before=_lines(LOG, 1, 2), after=_lines(LOG, 4, 5),
        keeps=frozenset({5}), keeps_whole=frozenset({2}),
    ),
    "metrics.jsonl: chart series": Reader(
        "metrics.jsonl", LOG, _charts, before=_lines(LOG, 1, 2), after=_lines(LOG, 4, 5),
        keeps=frozenset({1.0, 2.0, 4.0, 5.0}), keeps_whole=frozenset({1.0, 2.0}), new=9.0,
    ),
    "metrics.jsonl: insight points": Reader(
        "metrics.jsonl", LOG, _once(_points), before=_lines(LOG, 1, 2), after=_lines(LOG, 4, 5),
        keeps=frozenset({1, 2, 4, 5}), keeps_whole=frozenset({1, 2}),
    ),
    "metrics.jsonl: end event": Reader(
        "metrics.jsonl", END, _once(_ended), before=_lines(LOG, 1, 2), after=_lines(END, 5),
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
        "notifications.jsonl", ALERT, _alerts, before=_lines(ALERT, 1, 2), after=_lines(ALERT, 4),
        keeps=frozenset({1, 2, 4}), keeps_whole=frozenset({1, 2}),
    ),
    "command kind: JSON metrics lines": Reader(
        "stdout.log", b'{"step": @, "loss": 0.5}', _output(JsonReader), before=b'{"step": 1, "loss": 1}\n{"step": 2, "loss": 1}\n',
        after=b'{"step": 4, "loss": 0.25}\n', keeps=frozenset({1, 2, 4}),  # a tail: 100 MiB pass them
    ),
    "command kind: trainer bars": Reader(
        "stdout.log", BAR, _output(TrainerLogReader), before=_lines(BAR, 1, 2), after=_lines(BAR, 4),
        keeps=frozenset({1, 2, 4}),  # a tail: 100 MiB pass them
    ),
    "Ray log mirror: metrics": Reader(
        "ray.log", METRIC_PREFIX.encode() + LOG, _mirror,
        before=_lines(METRIC_PREFIX.encode() + LOG, 1, 2), after=_lines(METRIC_PREFIX.encode() + LOG, 4),
        keeps=frozenset({1, 2, 4}), keeps_whole=frozenset({1, 2}),
    ),
    "Ray log mirror: ranks": Reader(
        "ray.log", RANK_PREFIX.encode() + b'{"rank": @, "node_id": "n", "node_ip": "10.0.0.1"}', _mirror,
        before=RANK_PREFIX.encode() + b'{"rank": 1, "node_id": "n"}\n',
        after=RANK_PREFIX.encode() + b'{"rank": 4, "node_id": "n"}\n', keeps=frozenset({1, 4}),
        keeps_whole=frozenset({1}),
    ),
    "Slurm job output: ranks": Reader(
        "slurm/job-12.out", RANK, _slurm_output, before=_lines(RANK, 1, 2), after=_lines(RANK, 4),
        keeps=frozenset({1, 2, 4}), keeps_whole=frozenset({1, 2}),
    ),
    "profile request": Reader("PROFILE", b'{"steps": @, "time": 1.5}', _once(_profile)),
    "serve.json": Reader(
        "serve.json", b'{"url": "http://h:1", "model": "m", "engine": "vllm", "api_key_env": "", "ready": true, "ready_at": @}',
        _record(lambda p: ready.read(p.parent), lambda r: r["url"]),  # type: ignore[index]
    ),
    "wrapper.json (command kind)": Reader(
        "wrapper.json", b'{"output_dir": "/o", "n": @}', _once(_marker),
    ),
    "sharded model index": Reader(
        "model.safetensors.index.json", b'{"metadata": {"n": @}, "weight_map": {"w": "a.safetensors"}}',
        _once(_shards),
    ),
    "status.json": Reader(
        "status.json", b'{"state": "succeeded", "created": 1.5, "attempt": @, "exit_code": 0}',
        _record(status.read, lambda s: s.attempt),  # type: ignore[attr-defined]
    ),
    "slurm.json": Reader(
        "slurm.json", b'{"attempt": @, "job_name": "j", "script": "s", "job_id": 12}',
        _record(lambda p: slurm_record.read(_run(p)), lambda r: r.attempt),  # type: ignore[attr-defined]
    ),
    "cluster.json": Reader(
        "cluster.json", b'{"address": "http://h:8265", "submission_id": "s", "attempt": @}',
        _record(lambda p: ray_record.read_record(_run(p)), lambda r: r.attempt),  # type: ignore[attr-defined]
    ),
    "serve-node.json": Reader(
        node.NODE_FILE, b'{"attempt": 1, "url": "http://h:@", "model": "m", "started": @}',
        _record(lambda p: node.read(p.parent, 1), lambda r: r["url"]),  # type: ignore[index]
    ),
    "index.json": Reader(
        "index.json", b'{"format": "1:step", "runs": {"r": {"stamp": [1], "view": {"step": @}}}}',
        _once(_index),
    ),
    "chart-series cache": Reader("cache.json", b"", _once(_cache), prepare=_cache_item),
    "spec.toml": Reader("spec.toml", b"max_steps = @\n", _once(_spec), errors=(spec.SpecError,)),
    "slurm queue snapshot": Reader(
        "snapshot.json", b'{"taken": @, "error": "the controller is down"}', _once(_snapshot), good=b"5.5"
    ),
    "squeue --json": Reader("squeue.json", _squeue_item(), _once(_squeue)),
    "sinfo --json": Reader("sinfo.json", SINFO, _once(_sinfo), good=b"8"),
    "hl-smi CSV": Reader("query.csv", CSV, _once(_hl_smi), good=b"105"),
}  # fmt: skip
FILES = {"index.json": _index_file}
"""Readers of a file at a fixed place (under the test's own GAUDI_TUI_HOME)."""
DOCUMENTS = frozenset(name for name, r in READERS.items() if not r.before)
EVENTS = ["shrinks", "vanishes"]
ANSWERS = frozenset({"squeue --json", "sinfo --json"})
"""A command's answer, read whole once: it cannot shrink or vanish while read."""
STREAMS = frozenset({"Ray log mirror: metrics", "Ray log mirror: ranks"})
"""What an offset into Ray's log delivers: a stream, not a file that can shrink."""
