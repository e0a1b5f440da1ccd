"""torch.compile's compiles in a user's plain loop (no Trainer), for the wrapper (`site/sitecustomize.py`).

When a wrapped command imports `torch._dynamo` (torch.compile's first call does), `start` registers a
`CompileWatch` on dynamo's process-wide compile callbacks. A plain loop has no Trainer to say where
a step ends, so the step comes from torch's public optimizer hook
(`torch.optim.optimizer.register_optimizer_step_post_hook`, process-wide): each `optimizer.step()`
ends a step, and the events queued in it are written then, with the step in progress
(optimizer steps so far + 1, as Trainer's `global_step + 1`), and the rest at exit. A loop with two
optimizers counts two steps an iteration; a loop with none (inference) writes its events at exit.

Only rank 0 writes (`RANK`, else `SLURM_PROCID`, else `OMPI_COMM_WORLD_RANK`; unset: a single
process). Events go where the Trainer callback's go: appended to the run's `metrics.jsonl`, or the
log stream on a cluster. When a Trainer starts training, its callback takes over
(`hand_over`): one watch per process, no compile counted twice.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path
from typing import Any

from gaudi_tui.core.insight.compile_watch import CompileWatch
from gaudi_tui.core.jobs.worker.logstream import LOG_METRICS_ENV
from gaudi_tui.core.jobs.worker.sinks import FileSink, LogStreamSink, Sink

RANK_ENVS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK")
METRICS_FILE = "metrics.jsonl"
"""`RunFolder.metrics_path`'s name (runfolder's imports would cost every compiling job a second)."""

_active: LoopWatch | None = None
_trainer = False
"""A Trainer's callback watches this process's compiles (`hand_over`): no loop watch starts after."""


def rank(environ: dict[str, str] | os._Environ[str]) -> int:
    for name in RANK_ENVS:
        if (value := environ.get(name, "").strip()).isdigit():
            return int(value)
    return 0


class LoopWatch:
    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.compiles = CompileWatch()
        self.compiles.step = 1
        self.steps = 0
        self._hook: Any = None

    def start(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self.compiles.start()
        self._hook = register_optimizer_step_post_hook(self._stepped)
        atexit.register(self.close)

    def _stepped(self, optimizer: object, args: object, kwargs: object) -> None:
        self.steps += 1
        self.compiles.step = self.steps + 1
        self.flush()

    def flush(self) -> None:
        for event in self.compiles.drain():
            self.sink.write(event)

    def close(self) -> None:
        """Write what is queued and let go of torch's hooks (at exit, or for a Trainer's callback)."""
        if self._hook is None:
            return
        self._hook.remove()
        self._hook = None
        self.flush()
        self.compiles.stop()
        self.sink.close()
        atexit.unregister(self.close)


def start(run_path: str) -> LoopWatch | None:
    """Watch this process's compiles (rank 0 only; once); None where another rank or a Trainer's
    callback writes them."""
    global _active
    if _active is not None or _trainer or rank(os.environ) != 0:
        return None
    sink: Sink = (
        LogStreamSink() if os.environ.get(LOG_METRICS_ENV) else FileSink(Path(run_path) / METRICS_FILE)
    )
    watch = LoopWatch(sink)
    watch.start()
    _active = watch
    return watch


def hand_over() -> None:
    """A Trainer's callback watches the compiles from now on: this watch writes what it has and stops."""
    global _active, _trainer
    _trainer = True
    if _active is not None:
        _active.close()
        _active = None
