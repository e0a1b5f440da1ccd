"""The catalogue's readers of whole files and answers: one record a file (status, slurm, cluster,
serve and serve-node JSON, the wrapper's marker, the profile request, spec.toml, the jobs index,
the chart cache, the Slurm snapshot, a model's shard index) or one document of many items (squeue
and sinfo JSON, hl-smi CSV)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gaudi_tui
from gaudi_tui.core.chat import run_answer
from gaudi_tui.core.devices.parsers import detect
from gaudi_tui.core.insight import profile
from gaudi_tui.core.jobs import index, series_cache, spec, status
from gaudi_tui.core.jobs.kinds import command
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.targets.ray import record as ray_record
from gaudi_tui.core.jobs.targets.slurm import record as slurm_record
from gaudi_tui.core.serve import node, ready
from gaudi_tui.core.slurm import poll, queue_text
from gaudi_tui.core.slurm.cli import SlurmError, answered
from gaudi_tui.core.slurm.model import nodes_from_json
from gaudi_tui.core.untrusted.data import loads
from tests.untrusted.reader_model import LOG, Poller, Reader, Seen, lines_of, once

# ---- documents: one item a file, or a list of items in one document -----------------------------------


def _run(path: Path) -> RunFolder:
    return RunFolder(path.parent)


def _record(read: Callable[[Path], object], value: Callable[[object], object]) -> Callable[[Path], Poller]:
    """A reader of one record a file: its value, or "unreadable" (None) said."""

    def seen(path: Path) -> Seen:
        got = read(path)
        return Seen([value(got)] if got is not None else [], got is None)

    return once(seen)


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
    metrics.write_bytes(lines_of(LOG, 1, 2, 3, 4, 5, 6, 7))
    offset = len(lines_of(LOG, 1, 2, 3, 4, 5, 6))
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


SAMPLES = Path(gaudi_tui.__file__).parent / "data" / "hl-smi"


def _sample(name: str, value: bytes, item: bytes) -> bytes:
    """A real hl-smi output (gaudi_tui/data/hl-smi, SOURCES.md) with its first `value` made `item`."""
    raw = (SAMPLES / name).read_bytes()
    assert value in raw, name
    return raw.replace(value, item, 1)


TABLE = _sample("gaudi2-hl225-x8-1.20.0-busy-table.txt", b" 96W /", b" @W /")
DETAIL = _sample("gaudi2-hl225-1.12.1-list-detail.txt", b": 50 W", b": @ W")
TOPO = _sample("gaudi2-topo-cpu-numa.txt", b"4       40-79", b"@       40-79")
NIC = _sample("gaudi2e-nic-link-1.24.0.txt", b"port  2:", b"port  @:")


def _links(path: Path) -> Seen:
    """What `hl-smi topo -c -N` and `-n link` give: each module's NUMA node, each card's ports."""
    try:
        reading = detect.read_inputs([str(path)])
    except detect.InputError as exc:
        return Seen([], exc)
    numa = [(module, node) for module, node in reading.numa_by_module.items()]
    ports = [(card, port) for card, states in reading.nic_ports.items() for port in states]
    return Seen(numa + ports, reading.errors)


def _hl_smi(path: Path) -> Seen:
    try:
        reading = detect.read_inputs([str(path)])
    except detect.InputError as exc:
        return Seen([], exc)
    return Seen([d.power_draw_w for d in reading.devices], reading.errors)


def _marker(path: Path) -> Seen:
    """Where a `command` job's Trainer said it saves (the wrapper's marker in the run folder)."""
    folder = command.output_folder(_run(path), JobSpec(kind="command", command=("python", "t.py")))
    return Seen([str(folder)] if folder else [], folder is None)


def _shards(path: Path) -> Seen:
    """Whether a folder holds a whole sharded model, by its index (Chat's run answer)."""
    (path.parent / "a.safetensors").write_bytes(b"")
    whole = run_answer.weights_whole(path.parent)
    return Seen([whole] if whole else [], not whole)


def _profile(path: Path) -> Seen:
    """What the job reads of a profile request between two steps (and the panel says of it)."""
    try:
        return Seen([profile.asked_steps(path)])
    except (OSError, ValueError) as exc:
        return Seen([], exc)


FILES = {"index.json": _index_file}
"""Readers of a file at a fixed place (under the test's own GAUDI_TUI_HOME)."""

DOCUMENT_READERS: dict[str, Reader] = {
    "profile request": Reader("PROFILE", b'{"steps": @, "time": 1.5}', once(_profile)),
    "serve.json": Reader(
        "serve.json", b'{"url": "http://h:1", "model": "m", "engine": "vllm", "api_key_env": "", "ready": true, "ready_at": @}',
        _record(lambda p: ready.read(p.parent), lambda r: r["url"]),  # type: ignore[index]
    ),
    "wrapper.json (command kind)": Reader(
        "wrapper.json", b'{"output_dir": "/o", "n": @}', once(_marker),
    ),
    "sharded model index": Reader(
        "model.safetensors.index.json", b'{"metadata": {"n": @}, "weight_map": {"w": "a.safetensors"}}',
        once(_shards),
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
        once(_index),
    ),
    "chart-series cache": Reader("cache.json", b"", once(_cache), prepare=_cache_item),
    "spec.toml": Reader("spec.toml", b"max_steps = @\n", once(_spec), errors=(spec.SpecError,)),
    "slurm queue snapshot": Reader(
        "snapshot.json", b'{"taken": @, "error": "the controller is down"}', once(_snapshot), good=b"5.5"
    ),
    "squeue --json": Reader("squeue.json", _squeue_item(), once(_squeue)),
    "sinfo --json": Reader("sinfo.json", SINFO, once(_sinfo), good=b"8"),
    "hl-smi CSV": Reader("query.csv", CSV, once(_hl_smi), good=b"105", keeps=frozenset({100.0, 96.0})),
    "hl-smi table": Reader("table.txt", TABLE, once(_hl_smi), good=b"96"),
    "hl-smi -q detail": Reader("detail.txt", DETAIL, once(_hl_smi), good=b"50"),
    "hl-smi topo": Reader("topo.txt", TOPO, once(_links), good=b"4", keeps=frozenset({(0, 0), (7, 1)})),
    "hl-smi -n link": Reader(
        "link.txt", NIC, once(_links), good=b"2", keeps=frozenset({("0000:bb:00.0", 0), ("0000:bb:00.0", 10)})
    ),
}  # fmt: skip
