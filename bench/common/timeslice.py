"""Two training processes measured in turns: each runs alone for a slice while the other is paused.

Measured one after the other, the same run on this shared VM moved 18–30 % from run to run: the
machine's speed drifts over tens of seconds, so whichever side ran in a slow minute lost. Here both
processes are started and warmed up (one at a time: two torch thread teams on two cores stall each
other), then `take_turns` pauses one (SIGSTOP) and lets the other run
alone for `slice_s`, swapping every slice and the order every pair. Each side's steps/s in a slice
comes from its own step stamps inside that slice only (a window that spans a pause never counts),
and the ratio of the two slices of a pair compares them a few seconds apart, so the drift cancels.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import psutil

Marks = list[tuple[int, float]]
"""(step, wall time) stamps of one run, as it logs them."""
ENDLESS_STEPS = 100_000
"""The step bound of a run that takes turns: out of reach at any speed (it is ended once the turns
are over)."""


class CpuTimes(NamedTuple):
    user: float
    system: float


class Tree:
    """A process and its descendants, paused, resumed and charged together: a job's side is its
    supervisor (with the output follower's thread), the launcher and the script, as they run."""

    def __init__(self, root: psutil.Process) -> None:
        self.root = root
        self.pid = root.pid

    def members(self) -> list[psutil.Process]:
        try:
            return [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return [self.root]

    def suspend(self) -> None:
        for proc in self.members():
            try:
                proc.suspend()
            except psutil.Error:
                pass

    def resume(self) -> None:
        for proc in self.members():
            try:
                proc.resume()
            except psutil.Error:
                pass

    def cpu_times(self) -> CpuTimes:
        user = system = 0.0
        for proc in self.members():
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            user, system = user + times.user, system + times.system
        return CpuTimes(user, system)

    def is_running(self) -> bool:
        return self.root.is_running()

    def status(self) -> str:
        return str(self.root.status())


@dataclass
class Side:
    """One of the two processes and what it did in its slices."""

    proc: psutil.Process | Tree
    marks: Callable[[], Marks]
    """The run's stamps so far (read again after the turns)."""
    slices: list[tuple[float, float]] = field(default_factory=list)
    """(start, end) wall times of each slice this side ran alone."""
    cpu: list[float] = field(default_factory=list)
    """CPU seconds (user + system, all threads) the process used in each slice."""
    steps: list[int] = field(default_factory=list)
    """Steps stamped in each slice, when the slices end on a stamp (`take_turns(end_on_stamp=True)`)."""

    def last_step(self) -> int:
        return max((s for s, _ in self.marks()), default=0)

    def turns(self) -> list[float | None]:
        """Per slice: the seconds per step between its second and last stamp inside the slice (the
        first may be a line written just before the pause and read after it); None when the slice
        holds fewer than three such stamps (the machine gave this side almost nothing then)."""
        marks = self.marks()
        out: list[float | None] = []
        for start, end in self.slices:
            inside = [(s, t) for s, t in marks if start <= t <= end][1:]
            if len(inside) < 3 or inside[-1][0] <= inside[0][0]:
                out.append(None)
                continue
            (s0, t0), (s1, t1) = inside[0], inside[-1]
            out.append((t1 - t0) / (s1 - s0))
        return out

    def seconds_per_step(self) -> list[float]:
        """The turns that could be measured."""
        return [x for x in self.turns() if x is not None]

    def steps_per_s(self) -> list[float]:
        """The measured turns as steps per second."""
        return [1 / x for x in self.seconds_per_step()]

    def cpu_per_step(self) -> list[float | None]:
        """Per slice: CPU seconds per step. Slices that end on a stamp: the slice's CPU over the steps
        stamped in it (both exact: the process is paused between slices). Otherwise the slice's CPU
        over the steps it ran at its rate (wall-time stamps: under load, off by whatever the machine
        gave it outside the stamps). None where there is no figure."""
        if self.steps:
            return [cpu / steps if steps else None for cpu, steps in zip(self.cpu, self.steps, strict=True)]
        return [
            None if rate is None else cpu / ((end - start) / rate)
            for cpu, (start, end), rate in zip(self.cpu, self.slices, self.turns(), strict=True)
        ]


def cpu_seconds(proc: psutil.Process) -> float:
    """User + system CPU seconds of the process, all its threads."""
    times = proc.cpu_times()
    return times.user + times.system


STAMP_POLL_S = 0.01
"""How often a slice that ends on a stamp looks for it: the process runs at most this long past it."""


def take_turns(a: Side, b: Side, pairs: int, slice_s: float, end_on_stamp: bool = False) -> None:
    """`pairs` pairs of slices, `a` first in even pairs and `b` first in odd ones, both paused by
    `warm_up` before; both are left running afterwards, whatever happens. With `end_on_stamp`, a
    slice runs `slice_s`, then on until the side's next stamp (at most another `slice_s`), and is
    paused at once: its steps are then counted exactly (`Side.steps`), as is its CPU."""
    try:
        for i in range(pairs):
            for side in (a, b) if i % 2 == 0 else (b, a):
                first = side.last_step() if end_on_stamp else 0
                side.proc.resume()
                start, cpu = time.time(), cpu_seconds(side.proc)
                time.sleep(slice_s)
                if end_on_stamp:
                    due, seen = time.monotonic() + slice_s, side.last_step()
                    while side.last_step() == seen and time.monotonic() < due:
                        time.sleep(STAMP_POLL_S)
                side.proc.suspend()
                end, used = time.time(), cpu_seconds(side.proc) - cpu
                side.slices.append((start, end))
                side.cpu.append(used)
                if end_on_stamp:
                    side.steps.append(side.last_step() - first)
    finally:
        for side in (a, b):
            try:
                side.proc.resume()
            except psutil.Error:
                pass


def pair_ratios(a: Side, b: Side) -> list[float]:
    """b's steps/s over a's, slice pair by slice pair, for the pairs where both turns were measured;
    fails when under half were (the figure would stand on too little)."""
    pairs = list(zip(a.turns(), b.turns(), strict=True))
    out = [sa / sb for sa, sb in pairs if sa is not None and sb is not None]
    if len(out) < max(1, len(pairs) / 2):
        raise RuntimeError(
            f"only {len(out)} of {len(pairs)} pairs of turns had three step stamps in each turn"
        )
    return out


def warm_up(step: int, side: Side, timeout_s: float = 300.0) -> None:
    """Until the side has stamped `step` (its warm-up, for at most `timeout_s`), then paused until
    its turns."""
    deadline = time.monotonic() + timeout_s
    while not any(s >= step for s, _ in side.marks()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"process {side.proc.pid} did not reach step {step} within {timeout_s:g} s")
        if not side.proc.is_running() or side.proc.status() == psutil.STATUS_ZOMBIE:
            raise RuntimeError(f"process {side.proc.pid} ended during the warm-up")
        time.sleep(0.2)
    side.proc.suspend()
