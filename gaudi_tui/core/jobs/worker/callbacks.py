"""Trainer callbacks that run inside the job's processes (they import torch and transformers).

`MetricsCallback` hands one JSON object per event to a sink on rank 0 only: `metrics.jsonl`
(local jobs) or the job's log stream (Ray jobs, which the supervisor mirrors into the run folder).
`StopCallback` makes the graceful stop collective: rank 0 reads the stop flag (the STOP file, or
Ray's KV store on a cluster) and an all-reduce (MAX) on a CPU/gloo group shares it, so all ranks
stop at the same step, save one checkpoint together, and mark it complete only after every rank
has written its part. The check is not made every step: rank 0 proposes the next check step from
its measured step time (about every `CHECK_EVERY_S`), and that proposal travels in the same
all-reduce, so every rank agrees on which steps are checked.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import torch
import torch.distributed as dist
from transformers import TrainerCallback

from gaudi_tui.core.insight.probe import JobProbe
from gaudi_tui.core.insight.runtime import RuntimeMetrics, compile_figures, file_from_env
from gaudi_tui.core.jobs.insight.zone import offset_here
from gaudi_tui.core.jobs.runfolder import COMPLETE_MARKER, RunFolder
from gaudi_tui.core.jobs.worker.sinks import FileSink, Sink

CHECK_EVERY_S = 0.5
"""How often (in training time) the stop flag is checked; steps between checks are free."""
MAX_CHECK_INTERVAL = 1000


class CountingCollator:
    """Wraps a collator and counts the samples and non-padding tokens it hands out (this rank)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.samples = 0
        self.tokens = 0

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, Any]:
        batch = self.inner(features)
        self.samples += len(features)
        mask = batch.get("attention_mask")
        self.tokens += int(mask.sum()) if mask is not None else int(batch["input_ids"].numel())
        return batch


def distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def save_event(step: int, output_dir: Path) -> dict[str, object]:
    """The `save` event of the checkpoint Trainer writes at `step` into `output_dir`."""
    return {
        "event": "save",
        "time": time.time(),
        "step": step,
        "checkpoint": str(output_dir / f"checkpoint-{step}"),
    }


def end_event(step: int, max_steps: int, stopped: bool) -> dict[str, object]:
    return {"event": "end", "time": time.time(), "step": step, "max_steps": max_steps, "stopped": stopped}


class StopCallback(TrainerCallback):
    """`flag` is read on rank 0 only (other ranks may not see the STOP file or the cluster's KV)."""

    def __init__(self, flag: Callable[[], bool]) -> None:
        self.flag = flag
        self.group: Any = None
        self.stopped = False
        self.checks = 0
        self._next_check = 1
        self._interval = 1
        self._mark = (0.0, 0)

    def on_train_begin(self, args, state, control, **kwargs):  # noqa: ANN001 - Trainer's signature
        if distributed():
            # A CPU group even when training runs on HCCL/NCCL: the flag never touches the device.
            self.group = None if dist.get_backend() == "gloo" else dist.new_group(backend="gloo")
        self._next_check = state.global_step + 1
        self._mark = (time.monotonic(), state.global_step)
        return control

    def _proposal(self, step: int) -> int:
        """Rank 0's next interval: steps that take about CHECK_EVERY_S at the measured pace."""
        start, start_step = self._mark
        self._mark = (time.monotonic(), step)
        per_step = (self._mark[0] - start) / max(step - start_step, 1)
        return max(1, min(MAX_CHECK_INTERVAL, math.floor(CHECK_EVERY_S / max(per_step, 1e-6))))

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
        control = self._check_stop(state, control)
        if control.should_save:
            forget_complete(args, state)
        return control

    def on_epoch_end(self, args, state, control, **kwargs):  # noqa: ANN001
        if control.should_save:
            forget_complete(args, state)
        return control

    def _check_stop(self, state, control):  # noqa: ANN001, ANN202
        if state.global_step < self._next_check or self.stopped:
            return control
        self.checks += 1
        zero = state.is_world_process_zero
        mine = torch.tensor(
            [1 if zero and self.flag() else 0, self._proposal(state.global_step) if zero else 0],
            dtype=torch.int64,
        )
        if distributed():
            dist.all_reduce(mine, op=dist.ReduceOp.MAX, group=self.group)
        stop, self._interval = int(mine[0].item()), int(mine[1].item())
        self._next_check = state.global_step + self._interval
        if stop:
            self.stopped = True
            rank = dist.get_rank() if distributed() else 0
            print(f"[gaudi-tui] rank {rank} stopping at step {state.global_step}", flush=True)
            control.should_log = True
            control.should_save = True
            control.should_training_stop = True
        return control

    def on_save(self, args, state, control, **kwargs):  # noqa: ANN001
        if distributed():
            dist.barrier(group=self.group)  # every rank has written its part of the checkpoint
        if state.is_world_process_zero:
            checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            marker = {"step": state.global_step, "world_size": args.world_size, "time": time.time()}
            (checkpoint / COMPLETE_MARKER).write_text(json.dumps(marker) + "\n", encoding="utf-8")
        return control


def forget_complete(args, state) -> None:  # noqa: ANN001 - Trainer's TrainingArguments and TrainerState
    """Trainer is about to (re)write `checkpoint-<step>`: a completion marker left there by an earlier
    run of the same command (a requeue reruns it from its start) must not call the folder complete
    while it is rewritten. Every rank removes it before the save; rank 0 writes it again after."""
    with contextlib.suppress(OSError):
        (Path(args.output_dir) / f"checkpoint-{state.global_step}" / COMPLETE_MARKER).unlink(missing_ok=True)


def stop_file_flag(run: RunFolder) -> Callable[[], bool]:
    return run.stop_path.exists


def memory_mib(device: str) -> float | None:
    """Memory in use by this process on its device (host RSS on CPU)."""
    try:
        if device == "hpu":
            hpu = torch.hpu  # type: ignore[attr-defined]  # habana_frameworks adds torch.hpu on import
            used = hpu.memory_allocated() if hasattr(hpu, "memory_allocated") else hpu.memory_stats()["InUse"]
            return used / 2**20
        if device == "cuda":
            return torch.cuda.memory_allocated() / 2**20
        return psutil.Process().memory_info().rss / 2**20
    except Exception:  # noqa: BLE001 - a missing figure must never stop training
        return None


def hbm_figures(device: str) -> dict[str, object]:
    """On hpu: this process's peak HBM and the card's total (`memory_stats()["Limit"]`), in MiB."""
    if device != "hpu":
        return {}
    try:
        hpu = torch.hpu  # type: ignore[attr-defined]
        stats = hpu.memory_stats()
        return {"max_memory_mib": stats["MaxInUse"] / 2**20, "total_memory_mib": stats["Limit"] / 2**20}
    except Exception:  # noqa: BLE001 - a missing figure must never stop training
        return {}


class MetricsCallback(TrainerCallback):
    def __init__(
        self,
        run: RunFolder,
        device: str,
        counter: CountingCollator,
        samples_per_step: int,
        resumed_from: str | None,
        stop: StopCallback,
        sink: Callable[[], Sink] | None = None,
    ) -> None:
        self.run = run
        self.make_sink = sink or (lambda: FileSink(run.metrics_path))
        self.device = device
        self.counter = counter
        self.samples_per_step = samples_per_step
        self.resumed_from = resumed_from
        self.stop = stop
        self.out: Sink | None = None
        self.world = 1
        self._mark = (0.0, 0)  # time and step at the start of the current window
        self.hpu = RuntimeMetrics(Path(file_from_env(os.environ) or run.hpu_metrics_path))
        self.probe = JobProbe()
        """torch.compile's compiles and the input wait (`core/insight`)."""

    def _write(self, event: dict[str, object]) -> None:
        if self.out is not None:
            self.out.write(event)

    def _write_all(self, events: list[dict[str, object]]) -> None:
        for event in events:
            self._write(event)

    def _restart_window(self, step: int) -> None:
        self._mark = (time.monotonic(), step)

    def on_train_begin(self, args, state, control, **kwargs):  # noqa: ANN001
        self.world = args.world_size
        self._restart_window(state.global_step)
        if state.is_world_process_zero:
            self.out = self.make_sink()
            self._write(
                {
                    "event": "begin",
                    "time": time.time(),
                    "utc_offset_s": offset_here(),  # the runtime's stamps are in this host's zone
                    "step": state.global_step,
                    "max_steps": state.max_steps,
                    "world_size": self.world,
                    "device": self.device,
                    "resumed_from": self.resumed_from,
                }
            )
        self.probe.begin(args.process_index, self.run.path, self.device)
        return control

    def on_step_begin(self, args, state, control, **kwargs):  # noqa: ANN001
        self.probe.step_begin(state.global_step)
        return control

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
        self._write_all(self.probe.step_end(state.global_step))
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
        if not logs:
            return control
        # every rank's stall window, gathered to rank 0 (every rank logs at the same steps)
        found = self.probe.at_log(state.global_step, logs, self.stop.group, distributed())
        if not state.is_world_process_zero:
            self.probe.skip()
            return control
        # the user's figures first: a `time`, `step` or `event` of theirs never replaces ours
        base = {"time": time.time(), "step": state.global_step, "max_steps": state.max_steps}
        if "train_runtime" in logs:
            self._write({**logs, "event": "summary", **base})
        elif any(k.startswith("eval_") for k in logs):
            self._write({**logs, "event": "eval", **base})
        elif "loss" in logs:
            self._write({**logs, **self._rates(state.global_step), "event": "log", **base})
            self._write_all(found)
        self.probe.skip()  # writing the log is not waiting for data
        return control

    def _rates(self, step: int) -> dict[str, object]:
        start, start_step = self._mark
        seconds = max(time.monotonic() - start, 1e-9)
        samples_per_s = (step - start_step) * self.samples_per_step / seconds
        # Tokens per sample from everything collated so far: batches are collated ahead of the
        # step that uses them, so a per-window token count would jitter with the prefetch.
        per_sample = self.counter.tokens / self.counter.samples if self.counter.samples else 0.0
        rates: dict[str, object] = {
            "samples_per_s": samples_per_s,
            "tokens_per_s": samples_per_s * per_sample,
            "memory_mib": memory_mib(self.device),
            **hbm_figures(self.device),
        }
        if self.device == "hpu":
            rates.update(compile_figures(self.hpu))
        self._restart_window(step)
        return rates

    def on_evaluate(self, args, state, control, **kwargs):  # noqa: ANN001
        self._restart_window(state.global_step)  # evaluation time is not training throughput
        self.probe.skip()
        return control

    def on_save(self, args, state, control, **kwargs):  # noqa: ANN001
        if state.is_world_process_zero:
            self._write(save_event(state.global_step, Path(args.output_dir)))
        self.probe.skip()
        return control

    def on_train_end(self, args, state, control, **kwargs):  # noqa: ANN001
        self._write_all(self.probe.end(state.global_step))
        if state.is_world_process_zero:
            self._write(end_event(state.global_step, state.max_steps, self.stop.stopped))
            if self.out is not None:
                self.out.close()
            self.out = None
        return control
