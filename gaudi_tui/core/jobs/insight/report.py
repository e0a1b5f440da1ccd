"""One job's insight: its runtime metrics files, the memory its logs report and the bridge's
banner, aligned to training steps, with the findings (`findings.py`).

`InsightWatcher` follows a run folder with bounded reads (the metrics files are tailed, see
`runtime.py`; metrics.jsonl and stdout.log through `untrusted.files.AppendReader`), so the Training screen
can poll it every refresh. Compiles are aligned to steps by time: each rank's `graph_compilation`
dumps carry `generated_on`, each `log` event its `time`. Where the run folder has no metrics file
(Ray: the files stay on the nodes) the `graph_compilations` rank 0's callback puts into its log
events (through the log stream) are used. Compile time is `TotalTime`, whose unit Intel does not
state (vllm-gaudi treats it as µs): the share of wall time assumes µs and says so.
"""

from __future__ import annotations

import os
import re
import time
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from gaudi_tui.core.devices.model import DeviceSnapshot
from gaudi_tui.core.insight import findings
from gaudi_tui.core.insight.events import WORDS, WhySlow
from gaudi_tui.core.insight.findings import RECENT_STEPS, WARMUP_STEPS, Finding
from gaudi_tui.core.insight.runtime import CompileSample, RankMetrics, RuntimeMetrics, file_from_env
from gaudi_tui.core.jobs.insight.points import Points
from gaudi_tui.core.jobs.insight.zone import job_zone
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec, SpecError
from gaudi_tui.core.jobs.status import ACTIVE, effective_state
from gaudi_tui.core.jobs.summary import chunks_backwards, event_of, lines_end
from gaudi_tui.core.untrusted.files import AppendReader

TIME_UNIT_S = 1e-6
"""TotalTime's unit as assumed (unconfirmed: not stated in Intel's code or docs)."""
LOG_SLICE_BYTES = 1 << 20
"""metrics.jsonl is read this much at a time."""
BANNER_BYTES = 16 * 2**20
"""stdout.log is searched for the bridge's banner only this far (it is printed at start)."""
BANNER_CHUNK = 2**20
MAX_EVENTS = 100_000
"""A first read keeps at most this many of the newest `compile` and `stall` events."""
GRAPHS_SOURCE = "Intel's runtime metrics file (graph_compilation: the graphs its backend compiled)"
_LAZY = re.compile(r"^\s*PT_HPU_LAZY_MODE\s*=\s*(\S+)")


@dataclass(frozen=True)
class RankView:
    rank: int
    graphs: int | None
    warmup_graphs: int | None
    after_warmup_graphs: int | None
    recent_graphs: int | None
    compile_time: float | None
    fallback_ops: dict[str, int]
    defragmentations: int | None
    defragmentations_ok: int | None
    top_recipes: list[tuple[str, int, float]]
    exited: bool


@dataclass(frozen=True)
class Insight:
    job_id: str
    device: str
    metrics_file: str
    files_found: bool
    step: int
    warmup_end: int
    recent_steps: int
    ranks: list[RankView]
    steps: list[int]
    graphs_by_rank: dict[int, list[int | None]]
    compile_share: float | None
    max_memory_mib: float | None
    total_memory_mib: float | None
    lazy_banner: str | None
    lazy_asked: str | None
    memory_source: str = "log"
    """Where the HBM figures come from: the job's `log` events, or `hl-smi` (its cards' memory
    in use now, not a peak) when nothing in the log reports memory."""
    findings: list[Finding] = field(default_factory=list)
    time_unit: str = "µs (assumed: the runtime does not state TotalTime's unit)"
    graphs_source: str = GRAPHS_SOURCE
    """Whose count `ranks[].graphs` is: Intel's, beside torch's own in `torch` (never added)."""
    torch: dict[str, object] = field(default_factory=dict)
    """torch's own figures on every accelerator: torch.compile's frames and the input wait."""
    torch_lines: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["ranks"] = [r.__dict__ for r in self.ranks]
        out["findings"] = [f.to_dict() for f in self.findings]
        return out


def metrics_file(run: RunFolder, spec: JobSpec | None) -> Path:
    """The job's `PT_HPU_METRICS_FILE`: the user's own (relative to the job's folder) or the run's."""
    own = file_from_env(spec.env) if spec is not None else None
    if not own:
        return run.hpu_metrics_path
    path = Path(own).expanduser()
    if not path.is_absolute():
        path = (Path(spec.workdir).expanduser() if spec is not None and spec.workdir else run.path) / path
    return path


def card_memory(devices: DeviceSnapshot, modules: tuple[int, ...]) -> tuple[float, float] | None:
    """(used, total) MiB of the fullest of the job's cards in a device snapshot (a card is matched
    by its module ID, or by its index where the snapshot has none), or None."""
    found = [
        (float(d.memory_used_mib), float(d.memory_total_mib))
        for d in devices.devices
        if (d.module_id if d.module_id is not None else d.index) in modules
        and d.memory_used_mib is not None and d.memory_total_mib
    ]  # fmt: skip
    return max(found, key=lambda ut: ut[0] / ut[1]) if found else None


def graphs_at(samples: list[CompileSample], times: list[float], when: float) -> int | None:
    i = bisect_right(times, when)
    return samples[i - 1].total if i else (0 if samples else None)


class InsightWatcher:
    def __init__(self, run: RunFolder) -> None:
        self.run = run
        try:
            self.spec: JobSpec | None = run.spec()
        except SpecError:
            self.spec = None
        self.path = metrics_file(run, self.spec)
        self.runtime = RuntimeMetrics(self.path)
        self._log = AppendReader(run.metrics_path)
        self._banner_offset = 0
        self._banner_partial = b""
        self.history = Points()
        self.why = WhySlow()
        self.lazy_banner: str | None = None
        self._in_banner = 0

    def poll(self, catch_up: bool = False) -> bool:
        """What was appended since the last poll (`catch_up`: every metrics file to its end); whether
        anything was (a runtime file, a line of metrics.jsonl, a part of the log's banner)."""
        tails = len(self.runtime.tails)
        if not tails:  # until the first file appears: its stamps are in the job host's zone
            self.runtime.zone = job_zone(self.run.metrics_path)
        if catch_up:
            self.runtime.catch_up()
            read = True
        else:
            read = self.runtime.poll() or len(self.runtime.tails) != tails
        if not self._log.offset:
            read = self._read_back() or read
        while True:  # in slices: a long history is never held whole (1,000,000 lines: 200 MB)
            lines, _ = self._log.read_lines(at_most=LOG_SLICE_BYTES)
            read = read or bool(lines)
            for line in lines:
                if (event := event_of(line)) is not None:
                    self.history.apply(event)
                    self.why.apply(event)
            if not self._log.behind:
                break
        hpu = self.spec is not None and self.spec.device == "hpu"
        if hpu and self.lazy_banner is None and self._banner_offset < BANNER_BYTES:
            read = self._read_banner() or read
        return read

    def _read_back(self) -> bool:
        """The first read of metrics.jsonl: its complete lines from the end, as far as the points need;
        whether there were any."""
        try:
            with self._log.path.open("rb") as fh:
                end = lines_end(fh, os.fstat(fh.fileno()).st_size)
                self.history.read_back(fh, end)
                self._read_events(fh, end)
        except OSError:
            return False
        self._log.offset = end
        return end > 0

    def _read_events(self, fh: BinaryIO, end: int) -> None:
        """The `compile` events and each rank's newest `stall` before byte `end`, applied oldest first
        (other lines are not parsed)."""
        found: list[dict] = []
        ranks: set[object] = set()
        for chunk in chunks_backwards(fh, end):
            if not any(word in chunk for word in WORDS):
                continue
            for line in reversed(chunk.split(b"\n")):
                if any(word in line for word in WORDS) and (event := event_of(line)) is not None:
                    if event.get("event") == "stall":
                        if event.get("rank") in ranks:
                            continue
                        ranks.add(event.get("rank"))
                    if len(found) < MAX_EVENTS:
                        found.append(event)
        for event in reversed(found):
            self.why.apply(event)

    def _read_banner(self) -> bool:
        """The next part of stdout.log's head (at most BANNER_CHUNK a poll, BANNER_BYTES in all);
        whether there was one."""
        try:
            with self.run.log_path.open("rb") as fh:
                fh.seek(self._banner_offset)
                chunk = fh.read(min(BANNER_CHUNK, BANNER_BYTES - self._banner_offset))
        except OSError:
            return False
        self._banner_offset += len(chunk)
        *lines, self._banner_partial = (self._banner_partial + chunk).split(b"\n")
        self._banner_partial = self._banner_partial[-4096:]
        for line in lines:
            self._banner(line.decode("utf-8", "replace"))
        return bool(chunk)

    def _banner(self, text: str) -> None:
        if "HABANA PT BRIDGE CONFIGURATION" in text:
            self._in_banner = 60  # the banner's settings follow within a few dozen lines
        elif self._in_banner:
            self._in_banner -= 1
            if (match := _LAZY.match(text)) is not None:
                self.lazy_banner, self._in_banner = match.group(1), 0

    def insight(self, now: float | None = None, devices: DeviceSnapshot | None = None) -> Insight:
        """`devices`: a device snapshot of this host, for HBM when the job's log reports none."""
        now = time.time() if now is None else now
        spec = self.spec or JobSpec(max_steps=0)
        points = list(self.history.points)
        steps = [p.step for p in points]
        ranks = self.runtime.ranks()
        by_rank: dict[int, list[int | None]] = {}
        for rank, metrics in ranks.items():
            samples = [s for s in metrics.compiles if s.time is not None]
            times = [s.time for s in samples if s.time is not None]
            by_rank[rank] = [graphs_at(samples, times, p.time) for p in points]
        if not ranks and any(p.graphs is not None for p in points):
            by_rank[0] = [p.graphs for p in points]  # from the log stream (Ray)
        warmup_end = self.history.begin_step + WARMUP_STEPS
        last = steps[-1] if steps else self.history.begin_step
        start_i = _window_start(steps, max(warmup_end, last - RECENT_STEPS))
        recent_steps = last - steps[start_i] if start_i is not None else 0
        views = [
            _rank_view(rank, ranks.get(rank, RankMetrics()), series, steps, warmup_end, start_i)
            for rank, series in by_rank.items()
        ] or [_rank_view(r, m, [], steps, warmup_end, None) for r, m in ranks.items()]
        status = self.run.status()
        elapsed = status.elapsed(now) if status is not None else 0.0
        share = None
        times = [v.compile_time for v in views if v.compile_time is not None]
        if times and elapsed > 0:
            share = max(times) * TIME_UNIT_S / elapsed
        peak = next((p.max_memory_mib for p in reversed(points) if p.max_memory_mib is not None), None)
        peak = self.history.summary_peak if self.history.summary_peak is not None else peak
        total = next((p.total_memory_mib for p in reversed(points) if p.total_memory_mib is not None), None)
        source = "log"
        if peak is None and devices is not None and (cards := card_memory(devices, tuple(spec.cards))):
            (peak, total), source = cards, "hl-smi"
        asked = spec.env.get("PT_HPU_LAZY_MODE") or ("0" if spec.torch_compile else None)
        out = Insight(
            job_id=self.run.id, device=spec.device, metrics_file=str(self.path),
            files_found=self.runtime.found, step=last, warmup_end=warmup_end,
            recent_steps=recent_steps, ranks=views, steps=steps, graphs_by_rank=by_rank,
            compile_share=share, max_memory_mib=peak, total_memory_mib=total,
            lazy_banner=self.lazy_banner, lazy_asked=asked, memory_source=source,
            torch=self.why.to_dict(), torch_lines=self.why.lines(spec.device == "hpu"),
        )  # fmt: skip
        out.findings.extend(self._findings(out, spec, now))
        return out

    def _findings(self, out: Insight, spec: JobSpec, now: float) -> list[Finding]:
        found: list[Finding | None] = []
        storms = [(v.recent_graphs, v.rank) for v in out.ranks if v.recent_graphs is not None]
        if storms and out.step > out.warmup_end:
            graphs, rank = max(storms)
            differ = len({g for g, _ in storms}) > 1  # name the rank only where ranks differ
            found.append(findings.recompiling(graphs, out.recent_steps, rank if differ else None))
        ops: dict[str, int] = {}
        for view in out.ranks:
            for op, count in view.fallback_ops.items():
                ops[op] = max(ops.get(op, 0), count)
        found.append(findings.cpu_fallback(ops))
        found.append(findings.hbm_full(out.max_memory_mib, out.total_memory_mib))
        if out.lazy_banner is not None and out.lazy_asked is not None:
            found.append(findings.lazy_mismatch(out.lazy_banner, out.lazy_asked))
        found.append(self._no_card(out, spec, now))
        found.extend(self.why.findings(out.warmup_end, spec.device == "hpu"))
        return [f for f in found if f is not None]

    def _no_card(self, out: Insight, spec: JobSpec, now: float) -> Finding | None:
        status = self.run.status()
        if spec.device != "hpu" or spec.target == "ray" or out.files_found or out.graphs_by_rank:
            return None
        triggers = spec.env.get("PT_HPU_METRICS_DUMP_TRIGGERS", "process_exit,metric_change")
        if status is None or status.started is None or "metric_change" not in triggers:
            return None
        if effective_state(status, now) not in ACTIVE or now - status.started < findings.NO_METRICS_AFTER_S:
            return None
        return findings.no_card(now - status.started)


def _window_start(steps: list[int], at: int) -> int | None:
    """Index of the last point at or before step `at`."""
    i = bisect_right(steps, at)
    return i - 1 if i else None


def _rank_view(
    rank: int,
    m: RankMetrics,
    series: list[int | None],
    steps: list[int],
    warmup_end: int,
    start_i: int | None,
) -> RankView:
    warm_i = _window_start(steps, warmup_end)
    warm = series[warm_i] if warm_i is not None and series else None
    last = series[-1] if series else m.graphs
    recent = None
    if start_i is not None and series and series[start_i] is not None and last is not None:
        recent = last - series[start_i]  # type: ignore[operator]
    return RankView(
        rank=rank, graphs=m.graphs if m.graphs is not None else last, warmup_graphs=warm,
        after_warmup_graphs=(last - warm) if last is not None and warm is not None else None,
        recent_graphs=recent, compile_time=m.number("graph_compilation", "TotalTime"),
        fallback_ops=m.fallback_ops(), defragmentations=_int(m.number("memory_defragmentation", "TotalNumber")),
        defragmentations_ok=_int(m.number("memory_defragmentation", "TotalSuccessful")),
        top_recipes=list(m.top_recipes), exited=m.closed,
    )  # fmt: skip


def _int(value: float | None) -> int | None:
    return int(value) if value is not None else None
