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
from pathlib import Path
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
    """CPU seconds (all threads, `cpu_seconds`: the kernel's nanosecond count) the process used in each slice."""
    ticks: list[float] = field(default_factory=list)
    """The same from /proc/PID/stat's user + system (10 ms clock ticks), printed beside it."""
    charged: psutil.Process | None = None
    """Another process whose CPU in this side's slices is this side's cost (a job's supervisor)."""
    charged_cpu: list[float] = field(default_factory=list)
    """CPU seconds `charged` used in each of this side's slices."""
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

    def cpu_per_step(self, cpu: list[float] | None = None) -> list[float | None]:
        """Per slice: CPU seconds per step. Slices that end on a stamp: the slice's CPU over the steps
        stamped in it (both exact: the process is paused between slices). Otherwise the slice's CPU
        over the steps it ran at its rate (wall-time stamps: under load, off by whatever the machine
        gave it outside the stamps). None where there is no figure. `cpu`: per-slice CPU seconds to
        use instead of `self.cpu` (`self.ticks`, or with `charged_cpu` added)."""
        cpus = self.cpu if cpu is None else cpu
        if self.steps:
            return [c / steps if steps else None for c, steps in zip(cpus, self.steps, strict=True)]
        return [
            None if rate is None else c / ((end - start) / rate)
            for c, (start, end), rate in zip(cpus, self.slices, self.turns(), strict=True)
        ]

    def charged_per_step(self) -> list[float | None]:
        """Per slice: the CPU a step with `charged`'s CPU in the slice added (`cpu_per_step` without one)."""
        extra = self.charged_cpu or [0.0] * len(self.cpu)
        return self.cpu_per_step([c + e for c, e in zip(self.cpu, extra, strict=True)])


def cpu_seconds(proc: psutil.Process | Tree) -> float:
    """CPU seconds of the process (of each in a Tree), all its threads, ended ones included, to the
    nanosecond: Linux's CPU-time clock of the process (clock_getcpuclockid's id, `(~pid << 3) | 2`).
    /proc/PID/stat's user + system counts 10 ms ticks (±0.3 % of a 3 s turn on each side of a ratio);
    /proc/PID/task/*/schedstat loses a thread once it ends."""
    members = proc.members() if isinstance(proc, Tree) else [proc]
    total = 0.0
    for member in members:
        try:
            total += time.clock_gettime((~member.pid << 3) | CPUCLOCK_SCHED)
        except OSError:  # ended
            continue
    return total


CPUCLOCK_SCHED = 2
"""The kernel's CPU-clock kind: the scheduler's nanosecond runtime (not the tick-sampled user/system)."""


def tick_seconds(proc: psutil.Process | Tree) -> float:
    """User + system CPU seconds from /proc/PID/stat (10 ms ticks), for comparison."""
    times = proc.cpu_times()
    return times.user + times.system


def stop(proc: psutil.Process | Tree, timeout_s: float = 0.5) -> None:
    """SIGSTOP, then wait until the kernel shows it stopped (the signal is delivered asynchronously:
    a CPU reading taken before would miss the last moments it ran)."""
    proc.suspend()
    root = proc.root if isinstance(proc, Tree) else proc
    due = time.monotonic() + timeout_s
    while time.monotonic() < due:
        try:
            if root.status() in (psutil.STATUS_STOPPED, psutil.STATUS_ZOMBIE):
                return
        except psutil.Error:
            return
        time.sleep(0.0005)


STAMP_POLL_S = 0.01
"""How often a slice that ends on a stamp looks for it: the process runs at most this long past it."""


def take_turns(
    a: Side, b: Side, pairs: int, slice_s: float, end_on_stamp: bool = False, steps_per_turn: int = 0
) -> None:
    """`pairs` pairs of slices, `a` first in even pairs and `b` first in odd ones, both paused by
    `warm_up` before; both are left running afterwards, whatever happens. With `end_on_stamp`, a
    slice runs `slice_s`, then on until the side's next stamp (at most another `slice_s`), and is
    paused at once: its steps are then counted exactly (`Side.steps`), as is its CPU. With
    `steps_per_turn` (a multiple of the runs' logging steps), both turns of pair i run to the same
    step, `steps_per_turn` (i + 1) past where the further side stood: the two sides of a pair train
    on the same batches (same data, same seed), whose lengths, and so costs, differ from batch to
    batch; a turn that has not got there in 10 `slice_s` is paused where it is."""
    counted = end_on_stamp or steps_per_turn > 0
    base = max(a.last_step(), b.last_step())
    try:
        for i in range(pairs):
            for side in (a, b) if i % 2 == 0 else (b, a):
                first = side.last_step() if counted else 0
                cpu, ticks = cpu_seconds(side.proc), tick_seconds(side.proc)  # paused: exact
                charged = cpu_seconds(side.charged) if side.charged else 0.0
                start = time.time()
                side.proc.resume()
                if steps_per_turn:
                    target, due = base + (i + 1) * steps_per_turn, time.monotonic() + 10 * slice_s
                    while side.last_step() < target and time.monotonic() < due:
                        time.sleep(STAMP_POLL_S)
                else:
                    time.sleep(slice_s)
                if end_on_stamp and not steps_per_turn:
                    due, seen = time.monotonic() + slice_s, side.last_step()
                    while side.last_step() == seen and time.monotonic() < due:
                        time.sleep(STAMP_POLL_S)
                stop(side.proc)
                end = time.time()
                side.slices.append((start, end))
                side.cpu.append(cpu_seconds(side.proc) - cpu)
                side.ticks.append(tick_seconds(side.proc) - ticks)
                if side.charged:
                    side.charged_cpu.append(cpu_seconds(side.charged) - charged)
                if counted:
                    side.steps.append(side.last_step() - first)
    finally:
        for side in (a, b):
            try:
                side.proc.resume()
            except psutil.Error:
                pass


class Tail:
    """A file that only grows, read from where the last read stopped: its whole lines, each
    `parse`d once (the turns look for a new stamp every STAMP_POLL_S)."""

    def __init__(self, path: Path, parse: Callable[[str], object]) -> None:
        self.path, self.parse = path, parse
        self.offset = 0
        self.items: list = []

    def read(self) -> list:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
        except FileNotFoundError:
            return self.items
        whole = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(whole)
        self.items.extend(self.parse(line) for line in whole.decode().splitlines() if line.strip())
        return self.items


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
    stop(side.proc)


def cpu_ratios(a: list[float | None], b: list[float | None]) -> list[float]:
    """a's CPU seconds a step over b's, slice pair by slice pair, where both have a figure."""
    return [x / y for x, y in zip(a, b, strict=True) if x is not None and y is not None]
