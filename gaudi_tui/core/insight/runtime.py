"""The Gaudi runtime's metrics files (`PT_HPU_METRICS_FILE`), tailed with bounded memory.

Facts from Intel's writer (HabanaAI/gaudi-pytorch-bridge v1.19.0,
`python_packages/habana_frameworks/torch/hpu/metrics/saver.py`; see docs/runtime-metrics.md):

- JSON (the default format): `[`, then one `json.dumps` object per dump joined by `",\\n"`, and
  `]\\n` only when the process exits. A live file (or a killed process's) is an unterminated array.
  Each object is `{"metric_name", "triggered_by", "generated_on" (ISO time), "statistics"}`.
- Text: blocks of `Metric name: …`, `Triggered by: …`, `Generated on: …`, `Statistics:`, one
  `\\t<key>: <value>` line per statistic, and an empty line.
- Name: with `RANK` or `OMPI_COMM_WORLD_RANK` set, `-rank<N>` goes before the last extension
  (`m.json` → `m-rank0.json`); the file is opened exclusively and an existing name becomes
  `<name>.1`, `<name>.2`, … (a resumed attempt writing the same name gets the next one).
- With `PT_HPU_METRICS_GC_DETAILS=1` every `graph_compilation` object repeats the whole `recipe`
  list (`[name, duration]` per compile so far), so the file grows quadratically.

`MetricsTail` reads one file from a kept offset, only what was appended, at most `max_bytes` per
poll, and keeps the latest statistics per metric, a bounded compile history and the top recipes
of the latest list only. What a half-written object has so far waits for the rest (up to
`MAX_OBJECT_BYTES`). Tested here against a fake writer made from that source (tests/fakes), not
against a Gaudi.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path

from gaudi_tui.core.insight.rank_files import find_files
from gaudi_tui.core.insight.recipes import RecipeTally
from gaudi_tui.core.untrusted import data
from gaudi_tui.core.untrusted.data import Untrusted

HISTORY = 2048
"""Compile-count samples kept per file (one per `graph_compilation` dump, oldest dropped)."""
LIGHT_BYTES = 4096
"""A `graph_compilation` object longer than this (a GC-details list) with another one after it in
the same read is not parsed whole: its counts are read from its text (`_light`)."""
_LIGHT_HEAD = '{"metric_name": "graph_compilation"'
_LIGHT_FIELD = re.compile(r'"(generated_on|triggered_by)": "([^"]*)"')
_LIGHT_STAT = re.compile(r'"(TotalNumber|TotalTime|AvgTime)": (-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')
MAX_OBJECT_BYTES = 8 * 2**20
"""A half-written object larger than this is given up (skipped to the next object): a GC-details
list of 100,000 compiles is about 5 MiB, and what is kept stays well under the 64 MiB every reader
of outside input keeps to."""
MAX_POLL_BYTES = 4 * 2**20
CATCH_UP_POLLS = 4096
"""`catch_up` reads at most this many polls' worth (16 GiB): a file growing faster is left behind."""
_TRIGGER_PREFIX = "MetricDumpTrigger."  # str(enum) as Python 3.12 formats it in the text writer


@dataclass(frozen=True)
class CompileSample:
    """One `graph_compilation` dump: when, how many graphs so far, their total compile time."""

    time: float | None
    total: int
    total_time: float | None


@dataclass
class RankMetrics:
    """What one metrics file said, bounded: the latest statistics of each metric."""

    latest: dict[str, dict[str, object]] = field(default_factory=dict)
    compiles: deque[CompileSample] = field(default_factory=lambda: deque(maxlen=HISTORY))
    recipes: RecipeTally = field(default_factory=RecipeTally)
    objects: int = 0
    first_time: float | None = None
    closed: bool = False
    """The array's `]` was read: the process exited (JSON format only)."""
    zone: tzinfo | None = None
    """The writer's zone, for its `generated_on` (which has no offset); None: the reader's own."""

    def stat(self, metric: str, key: str) -> object:
        return self.latest.get(metric, {}).get(key)

    def number(self, metric: str, key: str) -> float | None:
        return data.number(self.stat(metric, key))

    @property
    def top_recipes(self) -> list[tuple[str, int, float]]:
        """(recipe, compiles, total time) of the GC-details lists, most compiled first."""
        return self.recipes.top

    @property
    def graphs(self) -> int | None:
        value = self.number("graph_compilation", "TotalNumber")
        return int(value) if value is not None else None

    def fallback_ops(self) -> dict[str, int]:
        ops = self.stat("cpu_fallback", "FallbackOps")
        if not isinstance(ops, dict):
            return {}
        counts = {str(k): data.integer(v, lo=0) for k, v in ops.items()}
        return {k: v for k, v in counts.items() if v is not None}

    def apply(self, obj: dict[str, object]) -> None:
        name = obj.get("metric_name")
        stats = obj.get("statistics")
        if not isinstance(name, str) or not isinstance(stats, dict):
            return
        self.objects += 1
        when = timestamp(obj.get("generated_on"), self.zone)
        if self.first_time is None and when is not None:
            self.first_time = when
        recipes = stats.pop("recipe", None)
        if isinstance(recipes, list):
            self.recipes.update(recipes)
        self.latest[name] = stats
        total = data.integer(stats.get("TotalNumber"), lo=0)
        if name == "graph_compilation" and total is not None:
            self.compiles.append(CompileSample(when, total, data.number(stats.get("TotalTime"))))


def timestamp(value: object, zone: tzinfo | None = None) -> float | None:
    """Epoch seconds of the writer's `generated_on`: `datetime.isoformat()` of the job host's local
    time, without an offset, read in `zone` (the job's, from its `begin` event) or, for a run that
    did not say it, in the reader's own zone. A stamp with an offset is read as it says."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return (when.replace(tzinfo=zone) if when.tzinfo is None and zone is not None else when).timestamp()


class MetricsTail:
    """One metrics file, read from where the last poll stopped. JSON or text, told by its content."""

    def __init__(self, path: Path, max_bytes: int | None = None) -> None:
        self.path = path
        self.max_bytes = max_bytes or MAX_POLL_BYTES
        self.metrics = RankMetrics()
        self.offset = 0
        self.size = 0
        self.buffer = ""
        self.format: str | None = None
        self.skipped = 0
        """Objects given up (larger than MAX_OBJECT_BYTES, or not JSON a reader can hold)."""
        self._text_block: dict[str, object] | None = None
        self._skipping = False
        """The rest of an object given up is still to come: dropped up to its line end."""
        self._skip_last = ""
        """The last character dropped while skipping (the line end may come in the next read)."""

    def poll(self) -> bool:
        """Read what was appended; True when something new was applied."""
        try:
            size = self.size = self.path.stat().st_size
        except OSError:
            return False
        if size < self.offset:  # replaced by a new file: start over
            self.__init__(self.path, self.max_bytes)  # type: ignore[misc]
            self.size = size
        if size == self.offset:
            return False
        before = self.metrics.objects
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read(min(size - self.offset, self.max_bytes))
        except OSError:
            return False
        self.offset += len(chunk)
        self.feed(chunk.decode("utf-8", "replace"))
        return self.metrics.objects != before or self.metrics.closed

    def feed(self, text: str) -> None:
        self.buffer += text
        if self.format is None:
            head = self.buffer.lstrip()
            if not head:
                return
            self.format = "json" if head.startswith("[") else "text"
        if self.format == "json":
            self._json()
        else:
            self._text()

    def _json(self) -> None:
        buf = self.buffer
        pos = 0 if not self._skipping else self._skip(buf, 0)
        while pos is not None:
            while pos < len(buf) and buf[pos] in "[,\n\r\t ":
                pos += 1
            if pos >= len(buf):
                break
            if buf[pos] == "]":
                self.metrics.closed = True
                pos += 1
                continue
            nxt = buf.find(",\n{", pos)
            if nxt - pos > LIGHT_BYTES and buf.startswith(_LIGHT_HEAD, pos) and _superseded(buf, nxt):
                self.metrics.apply(_light(buf, pos, nxt))  # a later dump has it all: counts only
                pos = nxt + 1
                continue
            try:
                obj, end = data.loads_at(buf, pos, what="a runtime metrics object", nonfinite=True)
            except Untrusted:
                if nxt >= 0:  # a broken object with a complete one after it: skip it
                    self.skipped += 1
                    pos = nxt + 1
                    continue
                if len(buf) - pos > MAX_OBJECT_BYTES:
                    self.skipped += 1
                    self._skipping = True
                    pos = self._skip(buf, pos)
                    continue
                break  # the rest of an object still being written
            if isinstance(obj, dict):
                self.metrics.apply(obj)
            pos = end
        self.buffer = buf[pos:] if pos is not None else ""

    def _skip(self, buf: str, pos: int) -> int | None:
        """Past the end of an object given up: its line end, the first real newline (json.dumps
        writes none inside a value), which the writer puts after `,` or after the array's `]`; a
        `]` inside the object (a recipe list) is never taken for the end. None: not there yet."""
        nl = buf.find("\n", pos)
        if nl < 0:
            self._skip_last = buf[-1:] or self._skip_last
            return None
        if (buf[nl - 1] if nl > pos else self._skip_last) == "]":
            self.metrics.closed = True
        self._skipping, self._skip_last = False, ""
        return nl + 1

    def _text(self) -> None:
        *lines, self.buffer = self.buffer.split("\n")
        if len(self.buffer) > MAX_OBJECT_BYTES:
            self.buffer, self.skipped = "", self.skipped + 1
        for line in lines:
            self._text_line(line.rstrip("\r"))

    def _text_line(self, line: str) -> None:
        block = self._text_block
        if line.startswith("Metric name: "):
            self._text_block = {"metric_name": line[13:].strip(), "statistics": {}}
        elif block is None:
            return
        elif line.startswith("Triggered by: "):
            block["triggered_by"] = line[14:].strip().removeprefix(_TRIGGER_PREFIX)
        elif line.startswith("Generated on: "):
            block["generated_on"] = line[14:].strip()
        elif line.startswith("\t") and ": " in line:
            key, raw = line[1:].split(": ", 1)
            block["statistics"][key] = text_value(raw)  # type: ignore[index]
        elif not line.strip():
            self.metrics.apply(block)
            self._text_block = None


def _superseded(buf: str, nxt: int) -> bool:
    """Whether the object after the one ending at `nxt` is a `graph_compilation` too."""
    return buf.startswith(_LIGHT_HEAD, nxt + 2)


def _light(buf: str, start: int, end: int) -> dict[str, object]:
    """A `graph_compilation` object's time and counts, read from its text without its recipe list
    (json.dumps writes `"key": value`; a quote inside a string is escaped, so these patterns
    cannot match inside a recipe name)."""
    obj: dict[str, object] = {"metric_name": "graph_compilation"}
    for match in _LIGHT_FIELD.finditer(buf, start, min(end, start + 512)):
        obj[match.group(1)] = match.group(2)
    stats: dict[str, object] = {}
    for match in _LIGHT_STAT.finditer(buf, start, end):
        if (value := scalar(match.group(2))) is not None:
            stats[match.group(1)] = value
    obj["statistics"] = stats
    return obj


_QUOTED = r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
_PAIR = re.compile(r"\[\s*" + _QUOTED + r"\s*,\s*([^\],]{1,64})\]")
_ENTRY = re.compile(_QUOTED + r"\s*:\s*([^,}]{1,64})")
_INT = re.compile(r"-?\d{1,19}")
NAME_CHARS = 4096
"""A recipe or op name is kept to this."""


def text_value(raw: str) -> object:
    """A statistic as the text writer printed it (`str()` of an int, float, dict or list), read
    with patterns that keep only what the statistics hold: a number, `{name: number}` (FallbackOps)
    or `[[name, number], ...]` (a GC-details recipe list). Never `ast.literal_eval`, which holds
    about 145 times its input (a 2.2 MiB recipe line: 320 MiB) and refuses nothing by size."""
    value = raw.strip()
    if value.startswith("["):
        return [[_name(m[1]), scalar(m[2])] for m in _PAIR.finditer(value)]
    if value.startswith("{"):
        return {_name(m[1]): scalar(m[2]) for m in _ENTRY.finditer(value)}
    number = scalar(value)
    return value[:NAME_CHARS] if number is None else number


def _name(quoted: str) -> str:
    return quoted[1:-1][:NAME_CHARS]


def scalar(raw: str) -> int | float | None:
    """An int within 64 bits or a finite float, as Python's str() writes them; else None."""
    raw = raw.strip()
    if _INT.fullmatch(raw):
        return data.integer(int(raw))
    if len(raw) > 64:
        return None
    try:
        return data.number(float(raw))
    except ValueError:
        return None


class RuntimeMetrics:
    """Every rank's file for one `PT_HPU_METRICS_FILE`, each tailed; the newest `.N` per rank."""

    def __init__(self, base: Path, max_bytes: int | None = None) -> None:
        self.base = base
        self.max_bytes = max_bytes
        self.tails: dict[tuple[int | None, int], MetricsTail] = {}
        self.zone: tzinfo | None = None
        """The writers' zone (RankMetrics.zone), for the files found from now on."""

    def poll(self) -> bool:
        changed = False
        for key, path in find_files(self.base).items():
            if key not in self.tails:
                self.tails[key] = MetricsTail(path, self.max_bytes)
                self.tails[key].metrics.zone = self.zone
        for tail in self.tails.values():
            changed = tail.poll() or changed
        return changed

    def ranks(self) -> dict[int, RankMetrics]:
        """Each rank's newest file (rank 0 for a process without `RANK`)."""
        newest: dict[int, tuple[int, RankMetrics]] = {}
        for (rank, index), tail in self.tails.items():
            key = rank if rank is not None else 0
            if key not in newest or index > newest[key][0]:
                newest[key] = (index, tail.metrics)
        return {rank: metrics for rank, (_, metrics) in sorted(newest.items())}

    def catch_up(self) -> None:
        """Poll until every file is read to its end (a one-shot reader: `jobs insight`)."""
        self.poll()
        for _ in range(CATCH_UP_POLLS):
            if all(t.offset >= t.size for t in self.tails.values()):
                break
            self.poll()

    @property
    def found(self) -> bool:
        return bool(self.tails)


FILE_ENV = ("PT_HPU_METRICS_FILE", "HABANA_PT_METRICS_FILE")
"""The writer's variable and its older alias (the first set wins, as in the saver)."""


def file_from_env(env: Mapping[str, str]) -> str | None:
    for name in FILE_ENV:
        if name in env:
            return env[name] or None
    return None


def compile_figures(metrics: RuntimeMetrics) -> dict[str, object]:
    """Rank 0's graph count and compile time for a `log` event (empty before its file exists)."""
    metrics.poll()
    rank0 = metrics.ranks().get(0)
    if rank0 is None or rank0.graphs is None:
        return {}
    return {
        "graph_compilations": rank0.graphs,
        "graph_compile_time": rank0.number("graph_compilation", "TotalTime"),
    }
