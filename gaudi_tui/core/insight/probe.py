"""What the Trainer callbacks (the built-in job's and the wrapper's) call at each hook to see why a
job is slow: torch.compile's compiles (`compile_watch`) and the input wait (`stalls.StepTimer`).
Rank 0 also answers a profile request between two steps (`profile.ProfileTaker`). It hands back
the events to write; the callback writes them through its own sink on rank 0."""

from __future__ import annotations

from pathlib import Path

from gaudi_tui.core.insight.compile_watch import CompileWatch
from gaudi_tui.core.insight.profile import ProfileTaker
from gaudi_tui.core.insight.stalls import StepTimer, window_event


class JobProbe:
    def __init__(self) -> None:
        self.compiles = CompileWatch()
        self.timer = StepTimer()
        self.profiles: ProfileTaker | None = None

    def begin(self, rank: int, run_path: Path, device: str) -> None:
        self.timer.rank = rank
        self.compiles.start()
        if rank == 0:
            self.profiles = ProfileTaker(run_path, device)

    def step_begin(self, global_step: int) -> None:
        self.timer.step_begin()
        self.compiles.step = global_step + 1  # the step now running

    def step_end(self, global_step: int) -> list[dict[str, object]]:
        self.timer.step_end()
        profiles = self.profiles
        if profiles is None:
            return self.compiles.drain()
        taken = profiles.step_end(global_step)
        if taken is not None or profiles.busy():
            self.timer.skip()  # starting or ending a profile (its trace written) is not waiting for data
        return self.compiles.drain() + ([taken] if taken is not None else [])

    def logged(self, step: int, group: object = None, distributed: bool = False) -> list[dict[str, object]]:
        """At a training log, on every rank (a collective when `distributed`): the compile events not
        yet written and each rank's stall window since the last log, gathered over `group` (a CPU
        group: the Trainer callbacks' gloo group)."""
        rows = [self.timer.take()]
        if distributed:
            import torch
            import torch.distributed as dist

            mine = torch.tensor(rows[0], dtype=torch.float64)
            every = [torch.zeros_like(mine) for _ in range(dist.get_world_size(group))]  # type: ignore[arg-type]
            dist.all_gather(every, mine, group=group)
            rows = [(float(w), float(b), int(n)) for w, b, n in (t.tolist() for t in every)]
        ranks = range(len(rows)) if distributed else [self.timer.rank]
        windows = [window_event(rank, step, *row) for rank, row in zip(ranks, rows, strict=True)]
        return self.compiles.drain() + [w for w in windows if w is not None]

    def at_log(
        self, step: int, logs: dict, group: object = None, distributed: bool = False
    ) -> list[dict[str, object]]:
        """At a Trainer log (on every rank: they log at the same steps), `logged` when it is a
        training log (a loss, not the summary nor an evaluation), else nothing."""
        training = (
            "loss" in logs and "train_runtime" not in logs and not any(k.startswith("eval_") for k in logs)
        )
        return self.logged(step, group, distributed) if training else []

    def skip(self) -> None:
        self.timer.skip()

    def end(self, global_step: int) -> list[dict[str, object]]:
        events = self.compiles.drain()
        self.compiles.stop()
        dropped = self.profiles.end(global_step) if self.profiles is not None else None
        return events + ([dropped] if dropped is not None else [])
