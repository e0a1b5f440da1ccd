"""What the Trainer callbacks (the built-in job's and the wrapper's) call at each hook to see why a
job is slow: torch.compile's compiles (`compile_watch`) and the input wait (`stalls.StepTimer`).
It hands back the events to write; the callback writes them through its own sink on rank 0."""

from __future__ import annotations

from gaudi_tui.core.insight.compile_watch import CompileWatch
from gaudi_tui.core.insight.stalls import StepTimer


class JobProbe:
    def __init__(self) -> None:
        self.compiles = CompileWatch()
        self.timer = StepTimer()

    def begin(self, rank: int) -> None:
        self.timer.rank = rank
        self.compiles.start()

    def step_begin(self, global_step: int) -> None:
        self.timer.step_begin()
        self.compiles.step = global_step + 1  # the step now running

    def step_end(self) -> list[dict[str, object]]:
        self.timer.step_end()
        return self.compiles.drain()

    def logged(self, step: int) -> list[dict[str, object]]:
        """At a log: the compile events not yet written and the stall window since the last log."""
        stall = self.timer.event(step)
        return self.compiles.drain() + ([stall] if stall is not None else [])

    def skip(self) -> None:
        self.timer.skip()

    def end(self) -> list[dict[str, object]]:
        events = self.compiles.drain()
        self.compiles.stop()
        return events
