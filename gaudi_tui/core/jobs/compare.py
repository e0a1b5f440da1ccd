"""Runs side by side: each run's chart lines on its steps, its final figures, and what differs.

Any run folder compares, in any state, of any target or kind, including folders written by
earlier versions: what a folder lacks (no spec, no metrics, no cluster record) is "—", never an
error. Each metrics.jsonl is read once, in slices, into the bounded lines of `series.py` (a
million-line file costs a few hundred points per line); the final figures are gathered on the
same read. Compiles are the log events' `graph_compilations` (the callback's `compile_figures`);
a run whose events carry none but whose folder holds the runtime's metrics files has them aligned
to steps by the insight reader. The memory line is the peak HBM the callback logs on Gaudi
(`max_memory_mib`), else the process's memory in use (`memory_mib`: host RSS on CPU).
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field, replace
from typing import Any

from gaudi_tui.core.insight.rank_files import find_files
from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs.compare_why import ROWS, WhyFigures
from gaudi_tui.core.jobs.insight.report import InsightWatcher, metrics_file
from gaudi_tui.core.jobs.liveness import current
from gaudi_tui.core.jobs.monitor import format_duration
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.series import Batch, ChartSeries, Downsampled
from gaudi_tui.core.jobs.targets.ray.record import read_record
from gaudi_tui.core.jobs.targets.slurm import record as slurm_record
from gaudi_tui.core.untrusted.data import number

MISSING = "—"
LINES = (
    "loss",
    "learning_rate",
    "samples_per_s",
    "tokens_per_s",
    "graph_compilations",
    "max_memory_mib",
    "memory_mib",
)
"""The `log` figures each run keeps a line of (`memory` below is max_memory_mib, else memory_mib)."""
CHARTS = ("loss", "learning_rate", "throughput", "compiles", "memory")
"""The lines each run draws (`lines` also holds samples_per_s and tokens_per_s)."""
Line = tuple[tuple[float, ...], tuple[float, ...]]


@dataclass(frozen=True)
class Final:
    """A run's final figures (None: not known from its folder)."""

    state: str
    error: str | None
    steps: int | None
    steps_per_s: float | None
    best_loss: float | None
    best_loss_step: int | None
    peak_memory_mib: float | None
    wall_s: float | None


@dataclass(frozen=True)
class RunSide:
    """One run as compared: its lines (CHARTS names, in step order), final figures and fields."""

    id: str
    name: str
    lines: dict[str, Line]
    final: Final
    fields: dict[str, str]
    throughput_unit: str = "samples/s"
    why: dict[str, str] = field(default_factory=dict)
    """Why it was slow, in words (compare_why.ROWS): recompiles, input wait, top op, Gaudi's graphs."""

    @property
    def label(self) -> str:
        """The name and the end of the id (two runs of one spec share a name), as the job list shows it."""
        return f"{self.name} · {self.id[-4:]}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "name": self.name,
            "final": self.final.__dict__,
            "fields": self.fields,
            "throughput_unit": self.throughput_unit,
            "why": self.why,
            "lines": {k: {"step": list(xs), "value": list(ys)} for k, (xs, ys) in self.lines.items()},
        }


@dataclass(frozen=True)
class Comparison:
    runs: list[RunSide]
    diff: list[tuple[str, list[str]]]
    """(field, each run's value): the fields that differ, or all of them (`everything`)."""
    everything: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": [r.to_dict() for r in self.runs],
            "diff": [{"field": name, "values": values} for name, values in self.diff],
            "all": self.everything,
        }


FIGURES = ("best", "peak", "first", "last", "summary_rate", "world", "ended_step")
"""What `_RunSeries` gathers besides the lines; saved with them, so a warm read has them too."""


def _step(value: object) -> int:
    if value.__class__ is not int:
        raise ValueError("not a step")
    return value


def _figures(state: dict[str, Any]) -> dict[str, Any]:
    """The saved figures, checked (ValueError, KeyError or TypeError when they are not ones)."""
    saved = state["figures"]

    def measure(value: object) -> float:
        if (out := number(value)) is None:
            raise ValueError("not a number")
        return out

    def pair(name: str, step_first: bool) -> tuple[Any, Any] | None:
        if saved[name] is None:
            return None
        a, b = saved[name]
        return (_step(a), measure(b)) if step_first else (measure(a), _step(b))

    if not isinstance(saved["world"], str):
        raise ValueError("not a world size")
    return {
        "best": pair("best", step_first=False),
        "first": pair("first", step_first=True),
        "last": pair("last", step_first=True),
        "peak": None if saved["peak"] is None else measure(saved["peak"]),
        "summary_rate": None if saved["summary_rate"] is None else measure(saved["summary_rate"]),
        "world": saved["world"],
        "ended_step": None if saved["ended_step"] is None else _step(saved["ended_step"]),
        "why": WhyFigures.restore(saved["why"]),
    }


class _RunSeries(ChartSeries):
    """ChartSeries that also gathers the final figures on its one read of metrics.jsonl (and keeps
    them in its saved series: a long run's second compare starts from there)."""

    def __init__(self, run: RunFolder) -> None:
        super().__init__(run.metrics_path, LINES)
        self.best: tuple[float, int] | None = None
        self.peak: float | None = None
        self.first: tuple[int, float] | None = None
        self.last: tuple[int, float] | None = None
        self.summary_rate: float | None = None
        self.world: str = MISSING
        self.ended_step: int | None = None
        self.why = WhyFigures()

    def _state(self) -> dict[str, Any]:
        figures = {name: getattr(self, name) for name in FIGURES}
        return {**super()._state(), "figures": {**figures, "why": self.why.state()}}

    def _adopt(self, state: dict[str, Any]) -> bool:
        try:
            figures = _figures(state)
        except (TypeError, KeyError, ValueError):
            return False
        if not super()._adopt(state):
            return False
        for name, value in figures.items():
            setattr(self, name, value)
        return True

    def read_all(self) -> None:
        """To the file's end, a slice at a time (stops where a read makes no progress)."""
        self.poll()
        while self.behind:
            offset = self.offset
            self.poll()
            if self.offset == offset:
                break

    def _apply(self, event: dict, batch: Batch) -> None:
        super()._apply(event, batch)
        kind = event.get("event")
        raw_step = event.get("step")
        step = raw_step if isinstance(raw_step, int) and not isinstance(raw_step, bool) else 0
        when = number(event.get("time"))
        for key in ("max_memory_mib", "memory_mib"):
            if (mib := number(event.get(key))) is not None and (self.peak is None or mib > self.peak):
                self.peak = mib
        if kind == "begin":
            self.first, self.summary_rate, self.ended_step = None, None, None
            if isinstance(event.get("world_size"), int):
                self.world = str(event["world_size"])
        elif kind == "log" and when is not None:
            if self.first is None:
                self.first = (step, when)
            self.last = (step, when)
            loss = number(event.get("loss"))
            if loss is not None and (self.best is None or loss < self.best[0]):
                self.best = (loss, step)
        elif kind == "summary":
            self.summary_rate = number(event.get("train_steps_per_second"))
        elif kind == "end":
            self.ended_step = step
        else:
            self.why.apply(event)  # compile, stall and profile events

    def steps_per_s(self) -> float | None:
        if self.summary_rate is not None:
            return self.summary_rate
        if self.first is None or self.last is None or self.last[1] <= self.first[1]:
            return None
        return (self.last[0] - self.first[0]) / (self.last[1] - self.first[1])


def _compiles_from_files(run: RunFolder, spec: spec_mod.JobSpec | None) -> Line:
    """Compiles by step from the runtime's metrics files, where the folder has them (Gaudi)."""
    if not find_files(metrics_file(run, spec)):
        return ((), ())
    watcher = InsightWatcher(run)
    watcher.poll(catch_up=True)
    insight = watcher.insight()
    graphs = insight.graphs_by_rank.get(0) or next(iter(insight.graphs_by_rank.values()), [])
    line = Downsampled()
    for step, count in zip(insight.steps, graphs, strict=False):
        if count is not None:
            line.add(float(step), float(count))
    return line.points()


def _run_fields(run: RunFolder, spec: spec_mod.JobSpec | None, world: str) -> dict[str, str]:
    """Every field to compare, as text. The run's own folder and id are written `{run}` and `{id}`
    (each run has its own, so they would differ in every comparison)."""

    def own(text: str) -> str:
        return text.replace(str(run.path), "{run}").replace(run.id, "{id}")

    status = run.status()
    out: dict[str, str] = {}
    for name in spec_mod.field_names():
        if name != "env":
            out[name] = (
                own(spec_mod.display(name, getattr(spec, name)) or '""') if spec is not None else MISSING
            )
    for key, value in sorted(spec_mod.masked_env(spec.env).items() if spec is not None else ()):
        out[f"env.{key}"] = own(value)
    command = [own(arg) for arg in status.command] if status is not None else []
    out["run.interpreter"] = command[0] if command else MISSING
    out["run.arguments"] = shlex.join(command[1:]) if command else MISSING
    out["run.accelerator"] = status.accelerator if status is not None else MISSING
    out["run.world_size"] = world
    out["run.nodes"] = _nodes(run)
    return out


def _nodes(run: RunFolder) -> str:
    """The hosts the run's ranks were on, as its cluster record kept them (local runs: none)."""
    ray = read_record(run)
    if ray is not None and ray.ranks:
        return ",".join(sorted({r.get("node_ip") or r.get("node_id", "") for r in ray.ranks.values()}))
    slurm = slurm_record.read(run)
    if slurm is not None and slurm.nodes:
        return ",".join(slurm.nodes)
    return MISSING


def side(run: RunFolder, now: float | None = None) -> RunSide:
    """One run folder, read once."""
    now = time.time() if now is None else now
    try:
        spec: spec_mod.JobSpec | None = run.spec()
    except spec_mod.SpecError:
        spec = None
    series = _RunSeries(run)
    series.read_all()
    raw = {name: line.points() for name, line in series.lines.items()}
    tokens = bool(raw["tokens_per_s"][0])
    memory = raw["max_memory_mib"] if raw["max_memory_mib"][0] else raw["memory_mib"]
    compiles = raw["graph_compilations"] if raw["graph_compilations"][0] else _compiles_from_files(run, spec)
    status = run.status()
    state = "unknown"
    if status is not None:
        status, state = current(run.status_path, status, now)
    best = series.best
    gaudi = (spec is not None and spec.device == "hpu") or bool(compiles[0])  # as Details decides
    final = Final(
        state=state,
        error=status.error if status is not None else None,
        steps=series.ended_step
        if series.ended_step is not None
        else (series.last[0] if series.last else None),
        steps_per_s=series.steps_per_s(),
        best_loss=best[0] if best else None,
        best_loss_step=best[1] if best else None,
        peak_memory_mib=series.peak,
        wall_s=status.elapsed(now) if status is not None and status.started is not None else None,
    )
    return RunSide(
        id=run.id,
        name=spec.name if spec is not None else run.id,
        lines={
            "loss": raw["loss"],
            "learning_rate": raw["learning_rate"],
            "throughput": raw["tokens_per_s"] if tokens else raw["samples_per_s"],
            "samples_per_s": raw["samples_per_s"],
            "tokens_per_s": raw["tokens_per_s"],
            "compiles": compiles,
            "memory": memory,
        },
        final=final,
        fields=_run_fields(run, spec, series.world),
        throughput_unit="tokens/s" if tokens else "samples/s",
        why=series.why.rows(gaudi, compiles[1][-1] if compiles[1] else None),
    )


def differences(runs: list[RunSide], everything: bool = False) -> list[tuple[str, list[str]]]:
    """Every field any run has, in a stable order, with each run's value ("—" where it has none);
    only the ones whose values differ unless `everything`."""
    names: dict[str, None] = {}
    for run in runs:
        names.update(dict.fromkeys(run.fields))
    ordered = sorted(names, key=lambda n: ("." in n, n.startswith("run.")))  # spec, env, run: stable
    rows = [(name, [run.fields.get(name, MISSING) for run in runs]) for name in ordered]
    return rows if everything else [(n, values) for n, values in rows if len(set(values)) > 1]


def compare(runs: list[RunFolder], everything: bool = False, now: float | None = None) -> Comparison:
    if len(runs) < 2:
        raise ValueError("compare needs two runs or more")
    sides = in_one_unit([side(run, now) for run in runs])
    return Comparison(runs=sides, diff=differences(sides, everything), everything=everything)


def in_one_unit(runs: list[RunSide]) -> list[RunSide]:
    """Throughput in tokens/s when every run that logs one has it, else samples/s for all (a
    command's wrapper counts samples only): one chart, one unit."""
    if all(r.throughput_unit == "tokens/s" for r in runs if r.lines["throughput"][0]):
        return runs
    return [
        replace(r, lines={**r.lines, "throughput": r.lines["samples_per_s"]}, throughput_unit="samples/s")
        for r in runs
    ]


@dataclass
class Table:
    """Rows of text for the final figures (what `jobs compare` prints and the screen shows)."""

    header: list[str]
    rows: list[list[str]] = field(default_factory=list)


def final_table(runs: list[RunSide]) -> Table:
    table = Table(["run", "outcome", "steps", "steps/s", "best loss (step)", "peak memory", "wall time"])
    for run in runs:
        f = run.final
        best = f"{f.best_loss:.4f} ({f.best_loss_step})" if f.best_loss is not None else MISSING
        table.rows.append(
            [
                run.label,
                f.state + (f": {f.error}" if f.error else ""),
                str(f.steps) if f.steps is not None else MISSING,
                f"{f.steps_per_s:.3g}" if f.steps_per_s is not None else MISSING,
                best,
                f"{f.peak_memory_mib:,.0f} MiB" if f.peak_memory_mib is not None else MISSING,
                format_duration(f.wall_s),
            ]
        )
    return table


def why_table(runs: list[RunSide]) -> Table:
    """Why each run was slow, side by side: one row a figure, one column a run."""
    table = Table(["why slow", *(run.label for run in runs)])
    for name in ROWS:
        table.rows.append([name, *(run.why.get(name, MISSING) for run in runs)])
    return table
