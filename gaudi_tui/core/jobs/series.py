"""The selected run's chart lines: bounded, downsampled series that keep their peaks, extended as
metrics.jsonl grows and never read again.

Each line holds at most 2 × BUCKETS buckets of equal point counts; a bucket keeps its lowest and its
highest point (so a loss spike shows however long the run), and when the buckets fill, neighbours
merge and each holds twice as many points. The reader keeps a byte offset: a poll parses only the
lines appended since (a long history in slices of at most `max_bytes`, so a screen stays live while
it loads). The smoothed loss is TensorBoard's debiased moving average of every raw point.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gaudi_tui.core.jobs import series_cache
from gaudi_tui.core.jobs.summary import event_of
from gaudi_tui.core.untrusted.data import number

BUCKETS = 100
"""A line draws at most 4 × BUCKETS + 1 points (the lowest and highest of each bucket, and the last)."""
METRICS = ("loss", "learning_rate", "grad_norm", "samples_per_s", "tokens_per_s")
SMOOTHING = 0.8
SLICE_BYTES = 1 << 20
SAVE_BYTES = 1 << 20
"""A reader that has read to the end saves its series when it read this much since the last save."""
FINITE = (float, int)
"""The types of a number value (a bool is neither)."""


class Downsampled:
    """(x, y) points in at most 2 × `buckets` buckets, each its min and max point."""

    def __init__(self, buckets: int = BUCKETS) -> None:
        self.limit = buckets
        self.width = 1
        """Points per bucket."""
        self.buckets: list[list[float]] = []
        """[first x, x of min, min, x of max, max, count]"""
        self.last: tuple[float, float] | None = None

    def add(self, x: float, y: float) -> None:
        self.extend([x], [y])

    def extend(self, xs: list[float], ys: list[float]) -> None:
        """Add points in x order (a bucket's share at a time, with min and max over the slice)."""
        i, n = 0, len(xs)
        while i < n:
            if not self.buckets or self.buckets[-1][5] >= self.width:
                self.buckets.append([xs[i], xs[i], ys[i], xs[i], ys[i], 1])
                i += 1
                if len(self.buckets) > 2 * self.limit:
                    self._merge()
                continue
            bucket = self.buckets[-1]
            take = min(self.width - int(bucket[5]), n - i)
            part = ys[i : i + take]
            low, high = min(part), max(part)
            if low < bucket[2]:
                bucket[1], bucket[2] = xs[i + part.index(low)], low
            if high > bucket[4]:
                bucket[3], bucket[4] = xs[i + part.index(high)], high
            bucket[5] += take
            i += take
        if n:
            self.last = (xs[-1], ys[-1])

    def _merge(self) -> None:
        pairs = self.buckets
        merged = []
        for a, b in zip(pairs[0::2], pairs[1::2], strict=False):
            low = a if a[2] <= b[2] else b
            high = a if a[4] >= b[4] else b
            merged.append([a[0], low[1], low[2], high[3], high[4], a[5] + b[5]])
        if len(pairs) % 2:
            merged.append(pairs[-1])
        self.buckets, self.width = merged, self.width * 2

    def state(self) -> dict[str, Any]:
        return {"width": self.width, "buckets": self.buckets, "last": self.last}

    @classmethod
    def restore(cls, state: dict[str, Any]) -> Downsampled:
        """A line from its `state`; ValueError when it is not one."""
        line = cls()
        width, buckets, last = state["width"], state["buckets"], state["last"]
        if not (isinstance(width, int) and width >= 1 and isinstance(buckets, list)):
            raise ValueError("not a line")
        if len(buckets) > 2 * line.limit or not all(
            isinstance(b, list) and len(b) == 6 and all(n.__class__ in FINITE for n in b) for b in buckets
        ):
            raise ValueError("not a line's buckets")
        line.width, line.buckets = width, [[*b[:5], int(b[5])] for b in buckets]
        line.last = None if last is None else (float(last[0]), float(last[1]))
        return line

    def drop_after(self, x: float) -> None:
        """Forget the buckets that start after `x` (a resume from step x); a bucket across x stays."""
        while self.buckets and self.buckets[-1][0] > x:
            self.buckets.pop()
        if self.last is not None and self.last[0] > x:
            self.last = None

    def points(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The line to draw, in x order: each bucket's min and max, then the last point."""
        picked: list[tuple[float, float]] = []
        for _, x_low, low, x_high, high, _ in self.buckets:
            if x_low == x_high:
                picked.append((x_low, low))
            else:
                picked += sorted(((x_low, low), (x_high, high)))
        if self.last is not None and (not picked or picked[-1][0] < self.last[0]):
            picked.append(self.last)
        return tuple(p[0] for p in picked), tuple(p[1] for p in picked)


class Batch:
    """The points of one slice, per line, before they go to their Downsampled lines."""

    def __init__(self, metrics: tuple[str, ...]) -> None:
        self.points: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in (*metrics, "eval")}
        self.changed = False


@dataclass(frozen=True)
class ChartData:
    """What the charts draw: each line's points, and the latest raw value of each."""

    lines: dict[str, tuple[tuple[float, ...], tuple[float, ...]]]
    latest: dict[str, float]
    read: float = 1.0
    """The share of metrics.jsonl read so far (below 1 while a long history loads)."""


class ChartSeries:
    """Every chart line of one metrics.jsonl: `poll` reads what was appended, `data` is what to draw.
    `metrics`: the `log` figures to keep a line of (the Training charts' by default). With `cache`,
    the first poll starts from the series saved by an earlier reader of the same file (series_cache),
    or the one the job's supervisor keeps in the run folder when that one was read further, and a
    poll that has read to the end saves it when SAVE_BYTES or more were read since. The supervisor's
    own (`keeper`) starts from and saves to the run folder's only."""

    def __init__(
        self, path: Path, metrics: tuple[str, ...] = METRICS, cache: bool = True, keeper: bool = False
    ) -> None:
        self.path = path
        self.metrics = metrics
        self.keeper = keeper
        self.behind = 0
        """Bytes written that no poll has read yet (a long history loading in slices)."""
        self.skipped = 0
        """Lines that were not events a reader can hold (`summary.event_of`), passed over."""
        self.saved = 0 if cache else -1
        """The offset of the last save (-1: no cache)."""
        self.lines: dict[str, Downsampled] = {}
        self._reset()
        self.restored = not cache
        """Whether the cache was looked at (at the first poll)."""

    def _restore(self) -> None:
        self.restored = True
        found = [series_cache.load(self.path, self.metrics, kept=True)]
        if not self.keeper:
            found.append(series_cache.load(self.path, self.metrics))
        for state in sorted((s for s in found if s is not None), key=lambda s: -s["offset"]):
            if self._adopt(state):
                return

    def _adopt(self, state: dict[str, Any]) -> bool:
        """Start from a saved state (a subclass adopts what it added to `_state` too); False, and
        nothing taken, when it is not one."""
        try:
            lines = {name: Downsampled.restore(state["lines"][name]) for name in self.lines}
            ema, count = state["ema"]
            if not (ema.__class__ in FINITE and count.__class__ is int):
                return False
        except (TypeError, KeyError, ValueError, IndexError):
            return False
        self.lines, self._ema, self.offset = lines, (float(ema), count), state["offset"]
        self.saved = self.offset
        return True

    def _state(self) -> dict[str, Any]:
        """What a later reader starts from: everything read to `offset`."""
        return {
            "offset": self.offset,
            "ema": list(self._ema),
            "lines": {name: line.state() for name, line in self.lines.items()},
        }

    def _save(self) -> None:
        series_cache.save(self.path, self.metrics, self._state(), kept=self.keeper)
        self.saved = self.offset

    def save_now(self) -> None:
        """Save what was read since the last save, however little (the supervisor at the job's end)."""
        if self.saved >= 0 and self.offset > self.saved:
            self._save()

    def _reset(self) -> None:
        self.offset = 0
        self.saved = min(self.saved, 0)
        self.lines = {name: Downsampled() for name in (*self.metrics, "smoothed", "eval")}
        self._ema = (0.0, 0)

    def poll(self, max_bytes: int = SLICE_BYTES) -> bool:
        """Read at most `max_bytes` of complete new lines; True when a line changed."""
        if not self.restored:
            self._restore()
            if self.offset:
                changed = self._read(max_bytes)
                return True if self.offset else changed  # the saved lines are new to the caller
        return self._read(max_bytes)

    def _read(self, max_bytes: int) -> bool:
        try:
            size = os.stat(self.path).st_size
        except OSError:  # gone (deleted mid catch-up): nothing is behind, or the poll would spin
            self.behind = 0
            return False
        if size < self.offset:  # cut back (a mirror starting afresh): read it again
            self._reset()
        if size == self.offset:
            self.behind = 0
            return False
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                data = fh.read(min(size - self.offset, max_bytes))
        except OSError:
            self.behind = 0
            return False
        complete = data.rfind(b"\n") + 1
        if not complete and size - self.offset > max_bytes:
            complete = len(data)  # one line longer than a slice: skip it
        # behind: what this read did not reach (a half-written last line is not: it waits for its
        # end, and a history "still loading" for ever would poll without a pause)
        self.behind = size - self.offset - len(data)
        self.offset += complete
        batch = Batch(self.metrics)
        for line in data[: complete - 1].split(b"\n") if complete else ():
            if (event := event_of(line)) is not None:
                self._apply(event, batch)
            elif line.strip():
                self.skipped += 1
        self._flush(batch)
        if self.saved >= 0 and not self.behind and self.offset - self.saved >= SAVE_BYTES:
            self._save()
        return batch.changed

    def _flush(self, batch: Batch) -> None:
        """Hand the points gathered since the last `begin` (or the slice's start) to their lines."""
        for name, (xs, ys) in batch.points.items():
            if name == "loss":
                ema, count = self._ema
                smoothed = []
                for value in ys:
                    ema, count = ema * SMOOTHING + (1 - SMOOTHING) * value, count + 1
                    smoothed.append(ema / (1 - SMOOTHING**count))
                self._ema = (ema, count)
                self.lines["smoothed"].extend(xs, smoothed)
            self.lines[name].extend(xs, ys)
        batch.points = {name: ([], []) for name in (*self.metrics, "eval")}

    def _apply(self, event: dict, batch: Batch) -> None:
        kind = event.get("event")
        step = number(event.get("step")) or 0.0  # a step that is not a number (a hand-written file) is 0
        if kind == "log":
            points = batch.points
            for name in self.metrics:
                value = event.get(name)
                if value.__class__ in FINITE and math.isfinite(value):
                    xs, ys = points[name]
                    xs.append(step)
                    ys.append(float(value))
            batch.changed = True
        elif kind == "eval" and (value := number(event.get("eval_loss"))) is not None:
            xs, ys = batch.points["eval"]
            xs.append(step)
            ys.append(value)
            batch.changed = True
        elif kind == "begin":
            self._flush(batch)
            for line in self.lines.values():
                line.drop_after(step)
            batch.changed = True

    def data(self) -> ChartData:
        total = self.offset + self.behind
        return ChartData(
            lines={name: line.points() for name, line in self.lines.items()},
            latest={name: line.last[1] for name, line in self.lines.items() if line.last is not None},
            read=self.offset / total if total else 1.0,
        )
