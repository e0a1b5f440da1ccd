"""The panel's callback inside a user's Trainer script (added by `site/sitecustomize.py`).

`PanelCallback` is the built-in job's graceful stop (`callbacks.StopCallback`: rank 0 reads the
run folder's STOP file, one all-reduce shares it, every rank stops at the same step and Trainer
saves one checkpoint, marked complete) plus its metrics: rank 0 writes `begin`, `log`, `eval`,
`save`, `summary` and `end` events to the run's `metrics.jsonl`, each with Trainer's step. The
run folder comes from `GAUDI_TUI_RUN`. Rank 0 also writes `wrapper.json` when training begins,
which tells the output reader of the command that the metrics come from here. On a cluster
(`GAUDI_TUI_LOG_METRICS`, set by `worker/ray_command.py`) the events and the marker are printed as
prefixed lines instead, and reach the panel through the job's log stream.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from gaudi_tui.core.insight.probe import JobProbe
from gaudi_tui.core.insight.runtime import RuntimeMetrics, compile_figures, file_from_env
from gaudi_tui.core.jobs.insight.zone import offset_here
from gaudi_tui.core.jobs.readers.figures import GB_KEYS
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.worker import loop_watch
from gaudi_tui.core.jobs.worker.callbacks import (
    StopCallback,
    distributed,
    end_event,
    memory_mib,
    save_event,
    stop_file_flag,
)
from gaudi_tui.core.jobs.worker.logstream import LOG_METRICS_ENV, WRAPPER_MARKER, WRAPPER_PREFIX
from gaudi_tui.core.jobs.worker.sinks import FileSink, LogStreamSink, Sink

RUN_ENV = "GAUDI_TUI_RUN"


def install(trainer_module: Any) -> None:
    """Add the callback to every Trainer `trainer_module` (transformers.trainer) will build."""
    if PanelCallback not in trainer_module.DEFAULT_CALLBACKS:
        trainer_module.DEFAULT_CALLBACKS.append(PanelCallback)


class PanelCallback(StopCallback, TrainerCallback):
    def __init__(self) -> None:
        self.run = RunFolder(Path(os.environ[RUN_ENV]))
        super().__init__(stop_file_flag(self.run))
        self.out: Sink | None = None
        self.device = "cpu"
        self.samples_per_step = 0
        self._window = (0.0, 0)
        metrics_file = file_from_env(os.environ)
        self.hpu = RuntimeMetrics(Path(metrics_file)) if metrics_file else None
        self.probe = JobProbe()
        """torch.compile's compiles and the input wait (`core/insight`)."""

    def _write(self, event: dict[str, object]) -> None:
        if self.out is not None:
            self.out.write(event)

    def _write_all(self, events: list[dict[str, object]]) -> None:
        for event in events:
            self._write(event)

    def on_train_begin(self, args, state, control, **kwargs):  # noqa: ANN001 - Trainer's signature
        control = super().on_train_begin(args, state, control, **kwargs)
        self.device = getattr(args.device, "type", "cpu")
        self.samples_per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps
        self.samples_per_step *= args.world_size
        self._window = (time.monotonic(), state.global_step)
        if state.is_world_process_zero:
            marker = {
                "pid": os.getpid(),
                "time": time.time(),
                "output_dir": str(Path(args.output_dir).resolve()),
            }
            (self.run.path / WRAPPER_MARKER).write_text(json.dumps(marker) + "\n", encoding="utf-8")
            if os.environ.get(LOG_METRICS_ENV):
                print(WRAPPER_PREFIX + json.dumps(marker), flush=True)
                self.out = LogStreamSink()
            else:
                self.out = FileSink(self.run.metrics_path)
            resumed = state.global_step or None
            self._write(
                {
                    "event": "begin",
                    "time": time.time(),
                    "utc_offset_s": offset_here(),  # the runtime's stamps are in this host's zone
                    "step": state.global_step,
                    "max_steps": state.max_steps,
                    "world_size": args.world_size,
                    "device": self.device,
                    "resumed_from": f"step {resumed}" if resumed else None,
                    "source": "wrapper",
                }
            )
        loop_watch.hand_over()  # the probe watches this process's compiles from now on
        self.probe.begin(args.process_index, self.run.path, self.device)
        return control

    def on_step_begin(self, args, state, control, **kwargs):  # noqa: ANN001
        self.probe.step_begin(state.global_step)
        return control

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
        control = super().on_step_end(args, state, control, **kwargs)  # the graceful stop
        self._write_all(self.probe.step_end(state.global_step))
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
        if not logs:
            return control
        # every rank's stall window, gathered to rank 0 (every rank logs at the same steps)
        found = self.probe.at_log(state.global_step, logs, self.group, distributed())
        if not state.is_world_process_zero:
            self.probe.skip()
            return control
        figures = {GB_KEYS.get(k, k): v * 1024 if k in GB_KEYS else v for k, v in logs.items()}
        base = {"time": time.time(), "step": state.global_step, "max_steps": state.max_steps}
        if "train_runtime" in figures:  # the user's figures first: ours are never replaced
            self._write({**figures, "event": "summary", **base})
        elif any(k.startswith("eval_") for k in figures):
            self._write({**figures, "event": "eval", **base})
        elif "loss" in figures:
            self._write({**self._rates(state.global_step), **figures, "event": "log", **base})
            self._write_all(found)
        self.probe.skip()  # writing the log is not waiting for data
        return control

    def _rates(self, step: int) -> dict[str, object]:
        start, start_step = self._window
        now = time.monotonic()
        self._window = (now, step)
        samples_per_s = (step - start_step) * self.samples_per_step / max(now - start, 1e-9)
        rates: dict[str, object] = {"samples_per_s": samples_per_s, "memory_mib": memory_mib(self.device)}
        if self.hpu is not None:
            rates.update(compile_figures(self.hpu))  # Ray: the counts travel in the log stream
        return rates

    def on_evaluate(self, args, state, control, **kwargs):  # noqa: ANN001
        self._window = (time.monotonic(), state.global_step)  # evaluation time is not throughput
        self.probe.skip()
        return control

    def on_save(self, args, state, control, **kwargs):  # noqa: ANN001
        control = super().on_save(args, state, control, **kwargs)  # the completion marker
        if state.is_world_process_zero:
            self._write(save_event(state.global_step, Path(args.output_dir).resolve()))
        self.probe.skip()
        return control

    def on_train_end(self, args, state, control, **kwargs):  # noqa: ANN001
        self._write_all(self.probe.end(state.global_step))
        if state.is_world_process_zero and self.out is not None:
            self._write(end_event(state.global_step, state.max_steps, self.stopped))
            self.out.close()
            self.out = None
        return control
