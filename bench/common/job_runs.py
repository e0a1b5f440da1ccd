"""One demo fine-tune through the real job path, timed: the local-against-cluster benches' unit."""

from __future__ import annotations

import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
STEPS = 60


def spec(**changes: object):  # noqa: ANN201 - JobSpec (imported after GAUDI_TUI_HOME is set)
    """The demo fine-tune both sides of a comparison run: 2 CPU processes, STEPS steps."""
    from dataclasses import replace

    from gaudi_tui.core.jobs.spec import PRESETS

    base: dict[str, object] = {
        "device": "cpu",
        "max_steps": STEPS,
        "max_seq_len": 64,
        "batch_size": 8,
        "logging_steps": 5,
        "processes": 2,
        "env": {"PYTHONPATH": str(ROOT)},
    }
    return replace(PRESETS["demo fine-tune"], **{**base, **changes})


def one_run(job) -> tuple[float, float]:  # noqa: ANN001 - JobSpec
    """(steps/s, seconds from submit to the first step) of one job."""
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.jobs import control
    from gaudi_tui.core.jobs.status import TERMINAL

    submitted = time.time()
    run = control.submit(job, Accelerator("cpu", "bench"))
    deadline = time.monotonic() + 600
    while (status := run.status()) is None or status.state not in TERMINAL:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{run.id} did not end in 600 s")
        time.sleep(0.5)
    if status.state != "succeeded":
        raise RuntimeError(f"{job.target} run {status.state}: {status.error}")
    events = [json.loads(line) for line in run.metrics_path.read_text().splitlines() if line.strip()]
    first = next(e for e in events if e.get("event") == "log")
    summary = next(e for e in events if e.get("event") == "summary")
    return float(summary["train_steps_per_second"]), float(first["time"]) - submitted
