"""Every metric of some runs as one table, for a notebook: `gaudi-tui jobs export ID … --csv|--parquet`.

One row per `log`, `eval` or `summary` event of each run's metrics.jsonl, in file order:
`run`, `attempt` (1, then one more at each `begin` after the first: a resume repeats steps),
`step` (-1 for an event without one), `event`, `time`, then one column per figure (`loss`, `learning_rate`, `eval_loss`, …;
empty where that event has none; at most MAX_FIGURES, and a line past SLICE_BYTES is skipped, said) — the wide shape pandas users pivot least. Each file is read
once, a slice at a time; the table is kept in typed columns (8 bytes a cell), not one dict a row,
and written by pandas (parquet through pyarrow).
"""

from __future__ import annotations

import math
import os
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.summary import event_of

if TYPE_CHECKING:
    import pandas as pd

ROWS = ("log", "eval", "summary")
SLICE_BYTES = 4 << 20
KEPT = ("event", "step", "time")
"""Keys that are columns of their own, not figures."""
MAX_FIGURES = 256
"""Figure columns at most: a file naming a new key on every line would add a full-length column each."""


class ExportError(Exception):
    """The table cannot be written (a path that cannot be written, pandas or pyarrow missing)."""


def lines_of(path: Path) -> Iterator[bytes | None]:
    """The complete lines of a file, read a slice at a time (a missing file has none); None for a
    line longer than `SLICE_BYTES`, which is not kept. Each byte is copied once: a line spanning
    slices is joined from its parts when it ends (adding each slice to the rest made a 100 MiB
    line copy about 1.3 GiB)."""
    try:
        fh = path.open("rb")
    except OSError:
        return
    with fh:
        parts: list[bytes] = []
        held = 0  # bytes of the open line so far; -1 once it is past SLICE_BYTES
        while chunk := fh.read(SLICE_BYTES):
            *lines, rest = chunk.split(b"\n")
            if lines:
                first = lines[0]
                fits = held >= 0 and held + len(first) <= SLICE_BYTES
                yield b"".join((*parts, first)) if fits else None
                yield from lines[1:]  # within one slice: never past SLICE_BYTES
                parts, held = [], 0
            if held >= 0 and held + len(rest) <= SLICE_BYTES:
                parts.append(rest)
                held += len(rest)
            else:
                parts, held = [], -1
        if held:
            yield b"".join(parts) if held > 0 else None


class Columns:
    """The table being built: fixed columns and one float column per figure, NaN where missing."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.run = array("i")
        self.attempt = array("i")
        self.step = array("q")
        self.event = array("b")
        self.time = array("d")
        self.figures: dict[str, array[float]] = {}
        self.rows = 0
        self.long_lines = 0
        """Lines past SLICE_BYTES, skipped."""
        self.extra_keys = 0
        """Figures of keys past MAX_FIGURES, skipped."""

    def add_run(self, run: RunFolder) -> None:
        code, attempt = len(self.runs), 0
        self.runs.append(run.id)
        for line in lines_of(run.metrics_path):
            if line is None:
                self.long_lines += 1
                continue
            if (event := event_of(line)) is None:
                continue
            kind = event.get("event")
            if kind == "begin" or (kind in ROWS and attempt == 0):
                attempt += 1
            if kind in ROWS:
                self._row(code, attempt, ROWS.index(kind), event)

    def _row(self, run: int, attempt: int, kind: int, event: dict) -> None:
        step = event.get("step")
        self.run.append(run)
        self.attempt.append(attempt)
        self.step.append(step if isinstance(step, int) and not isinstance(step, bool) else -1)
        self.event.append(kind)
        self.time.append(_float(event.get("time")))
        for key, value in event.items():
            if key in KEPT or key == "max_steps" or math.isnan(_float(value)):
                continue
            column = self.figures.get(key)
            if column is None and len(self.figures) >= MAX_FIGURES:
                self.extra_keys += 1
                continue
            if column is None:
                column = self.figures[key] = array("d", [math.nan]) * self.rows
            column.append(_float(value))
        self.rows += 1
        for column in self.figures.values():
            if len(column) < self.rows:
                column.append(math.nan)

    def skipped(self) -> str:
        """What was left out, in words ('' for nothing)."""
        said = []
        if self.long_lines:
            said.append(f"{self.long_lines} line(s) longer than {SLICE_BYTES >> 20} MiB")
        if self.extra_keys:
            said.append(f"{self.extra_keys} figure(s) of keys past the first {MAX_FIGURES}")
        return "; ".join(said)

    def frame(self) -> pd.DataFrame:
        import numpy as np
        import pandas as pd

        data: dict[str, object] = {
            "run": pd.Categorical.from_codes(np.frombuffer(self.run, dtype=np.int32), categories=self.runs),
            "attempt": np.frombuffer(self.attempt, dtype=np.int32),
            "step": np.frombuffer(self.step, dtype=np.int64),
            "event": pd.Categorical.from_codes(np.frombuffer(self.event, dtype=np.int8), categories=ROWS),
            "time": pd.to_datetime(np.frombuffer(self.time, dtype=np.float64), unit="s", utc=True),
        }
        data.update((key, np.frombuffer(column, dtype=np.float64)) for key, column in self.figures.items())
        return pd.DataFrame(data, copy=False)  # the columns as they are: no second copy of the table


def _float(value: object) -> float:
    """A figure as a float (NaN for what is not a finite number: a string, a bool, None)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return math.nan


def table(runs: list[RunFolder]) -> tuple[pd.DataFrame, str]:
    """The table of `runs`, and what was left out of it in words ('' for nothing)."""
    columns = Columns()
    for run in runs:
        columns.add_run(run)
    return columns.frame(), columns.skipped()


def write(runs: list[RunFolder], path: Path, fmt: str) -> tuple[int, str]:
    """Write the table of `runs` to `path` as `csv` or `parquet`; the number of rows written, and
    what was left out in words ('' for nothing)."""
    if fmt not in ("csv", "parquet"):
        raise ExportError(f"unknown format {fmt!r}: csv or parquet")
    parent = path.expanduser().parent
    if not parent.is_dir():
        raise ExportError(f"cannot write {path}: {parent} is not a folder")
    try:
        frame, skipped = table(runs)
    except ImportError as exc:
        raise ExportError(f"the export needs pandas ({exc.name} is not installed)") from None
    target = path.expanduser()
    partial = target.with_name(f".{target.name}.partial")  # a file already there stays whole on an error
    try:
        if fmt == "csv":
            frame.to_csv(partial, index=False)
        else:
            frame.to_parquet(partial, index=False)
        os.replace(partial, target)
    except ImportError as exc:
        raise ExportError(f"parquet needs pyarrow: {exc}") from None
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        partial.unlink(missing_ok=True)
    return len(frame), skipped
