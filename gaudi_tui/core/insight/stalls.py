"""Input stalls: the share of each step a rank spends waiting for its next batch.

Trainer calls `on_step_begin` once it has the step's batches (`get_batch_samples` fetches every
micro-batch of the step first) and `on_step_end` after the optimizer step, so the time from one
step's end to the next step's begin is the data loader's `__next__` (collation, a slow
`__getitem__`, too few workers), plus logging, evaluation and saving, which `StepTimer.skip` takes
out. `StepTimer` runs in every rank's process; at each log the ranks' windows are gathered to rank 0
(`probe.JobProbe.logged`), which writes one `stall` event per rank; `Stalls` reads them back, and `finding` says what to do above `STALL_SHARE`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from gaudi_tui.core.insight.finding import Finding

EVENT = "stall"
STALL_SHARE = 0.20
"""Above this share of step time spent waiting for the next batch, the finding fires."""
SOURCE = "the Trainer callback's clock: from one step's end to the next step's begin"


class StepTimer:
    """One rank's clock. The first gap (the loader's start) is not counted."""

    def __init__(self, rank: int = 0) -> None:
        self.rank = rank
        self._end: float | None = None
        self._begin: float | None = None
        self.wait = self.busy = 0.0
        self.steps = 0

    def step_begin(self) -> None:
        now = time.perf_counter()
        if self._end is not None:
            self.wait += now - self._end
        self._begin = now

    def step_end(self) -> None:
        now = time.perf_counter()
        if self._begin is not None:
            self.busy += now - self._begin
            self.steps += 1
        self._begin, self._end = None, now

    def skip(self) -> None:
        """What ran since the last step's end (a log, an evaluation, a save) is not waiting for data."""
        if self._end is not None:
            self._end = time.perf_counter()

    def take(self) -> tuple[float, float, int]:
        """(wait, busy, steps) since the last take, and a new window."""
        taken = (self.wait, self.busy, self.steps)
        self.wait = self.busy = 0.0
        self.steps = 0
        return taken

    def event(self, step: int) -> dict[str, object] | None:
        """This rank's window since the last take as a `stall` event (None: no whole step in it)."""
        return window_event(self.rank, step, *self.take())


def window_event(rank: int, step: int, wait: float, busy: float, steps: int) -> dict[str, object] | None:
    """One rank's window as a `stall` event (None: no whole step in it)."""
    if not steps:
        return None
    total = wait + busy
    return {
        "event": EVENT,
        "time": time.time(),
        "step": step,
        "rank": rank,
        "steps": steps,
        "wait_s": wait,
        "step_s": total / steps,
        "share": wait / total if total > 0 else 0.0,
    }


@dataclass(frozen=True)
class Window:
    step: int
    steps: int
    share: float
    wait_s: float
    step_s: float


class Stalls:
    """The newest `stall` window of each rank, from metrics.jsonl's events."""

    def __init__(self) -> None:
        self.ranks: dict[int, Window] = {}

    def apply(self, event: dict) -> None:
        if event.get("event") != EVENT:
            return
        rank, step, steps = event.get("rank"), event.get("step"), event.get("steps")
        share, wait, per_step = event.get("share"), event.get("wait_s"), event.get("step_s")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (rank, step, steps)):
            return
        if not all(_finite(v) for v in (share, wait, per_step)) or len(self.ranks) >= 4096:
            return
        self.ranks[rank] = Window(step, steps, float(share), float(wait), float(per_step))  # type: ignore[arg-type, index]

    def to_dict(self) -> dict[str, object]:
        return {"source": SOURCE, "ranks": {r: w.__dict__ for r, w in sorted(self.ranks.items())}}

    def lines(self) -> list[str]:
        return [
            f"input wait (rank {r}): {w.share:.0%} of step time in the {w.steps} steps to step {w.step} "
            f"({w.wait_s:.2f} s waiting; {w.step_s * 1000:.0f} ms a step)"
            for r, w in sorted(self.ranks.items())
        ]


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e12


def finding(stalls: Stalls) -> Finding | None:
    """The rank that waits longest, above STALL_SHARE."""
    if not stalls.ranks:
        return None
    rank, worst = max(stalls.ranks.items(), key=lambda rw: rw[1].share)
    if worst.share <= STALL_SHARE:
        return None
    where = f" on rank {rank}" if len(stalls.ranks) > 1 else ""
    return Finding(
        "input-stall",
        f"> {STALL_SHARE:.0%} of step time waiting for the next batch",
        f"waiting for data{where}: {worst.share:.0%} of each step in the {worst.steps} steps to step "
        f"{worst.step} ({worst.step_s * 1000:.0f} ms a step)",
        "feed the step faster: raise dataloader_num_workers (loading in worker processes), "
        "dataloader_pin_memory=True, dataloader_persistent_workers=True (workers outlive each epoch), "
        "dataloader_prefetch_factor=… (batches ready ahead per worker), and tokenize once ahead "
        "(dataset.map(tokenize, batched=True) before training) instead of in __getitem__",
    )
