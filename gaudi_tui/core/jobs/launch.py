"""From a spec and the accelerator to the launcher's argv and environment.

Gaudi: `accelerate launch`, one process per chosen card, `HABANA_VISIBLE_MODULES` set (HCCL is
chosen by Transformers). CPU: `torchrun` with gloo (accelerate's multi-CPU mode needs MPI and
silently starts one process). One process: the training module directly.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import cast

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.jobs.jobspec import JobSpec, Launcher
from gaudi_tui.core.jobs.runfolder import RunFolder

TRAIN_MODULE = "gaudi_tui.core.jobs.worker.train"


def prepare(
    spec: JobSpec,
    accel: Accelerator,
    selected_cards: Sequence[int] = (),
    env_fixes: Mapping[str, str] | None = None,
) -> JobSpec:
    """The spec as it will run: device, cards, process count and launcher resolved, job env merged.

    Env precedence (last wins): the accelerator's child env, the Checklist's fixes, the spec's own.
    """
    device = accel.kind if spec.device == "auto" else spec.device
    cards = tuple(spec.cards) or (tuple(selected_cards) if device == "hpu" else ())
    processes = len(cards) or spec.processes
    if device == "hpu" and not cards and processes > 1:
        cards = tuple(range(processes))  # the first N modules: {0,1}, {0..3}, {0..7} are supported sets
    launcher = spec.launcher
    if launcher == "auto":
        launcher = "single" if processes == 1 else cast(Launcher, accel.launcher)
    env = dict(accel.child_env(cards, compile=spec.torch_compile))
    env.update(env_fixes or {})
    env.update(spec.env)
    return replace(spec, device=device, cards=cards, processes=processes, launcher=launcher, env=env)


def command(
    run: RunFolder, spec: JobSpec, resume: Path | None = None, python: str | None = None
) -> list[str]:
    """The launcher's argv for a prepared spec (never a shell string)."""
    python = python or sys.executable
    entry = [TRAIN_MODULE, str(run.path)]
    if resume is not None:
        entry += ["--resume", str(resume)]
    if spec.launcher == "torchrun":
        return [
            python, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={spec.processes}", "--module", *entry,
        ]  # fmt: skip
    if spec.launcher == "accelerate":
        argv = [python, "-m", "accelerate.commands.launch", f"--num_processes={spec.processes}"]
        argv += ["--num_machines=1", "--dynamo_backend=no", "--mixed_precision=no"]
        if spec.processes > 1:
            argv += ["--multi_gpu", f"--main_process_port={free_port()}"]
        return [*argv, "--module", *entry]
    return [python, "-m", *entry]


def job_env(run: RunFolder, spec: JobSpec, base: Mapping[str, str]) -> dict[str, str]:
    """The environment the launcher runs with: `base` plus the spec's env and the run's own settings.

    On hpu the runtime's metrics file, its triggers and format are set only where neither the spec
    nor `base` chose them (a user's own `PT_HPU_METRICS_FILE` is kept, and read: `insight.report`).
    """
    env = dict(base)
    env.update(spec.env)
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    if spec.device == "hpu":
        for name, value in runtime_metrics_env(run).items():
            if name not in env and name.replace("PT_HPU_", "HABANA_PT_", 1) not in env:
                env[name] = value  # the user's own choice (or its older alias) is kept
    return env


def runtime_metrics_env(run: RunFolder) -> dict[str, str]:
    """The Gaudi runtime's metrics file, dumped at every change (Intel's advice for dynamic shapes)."""
    return {
        "PT_HPU_METRICS_FILE": str(run.hpu_metrics_path),
        "PT_HPU_METRICS_DUMP_TRIGGERS": "process_exit,metric_change",
        "PT_HPU_METRICS_FILE_FORMAT": "json",
    }


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
