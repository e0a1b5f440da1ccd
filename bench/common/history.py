"""A year of runs, generated: distinct runs made from the real finished run of tests/jobs/data/runs/,
and one long run logging every step, as a run folder of this version lays them out.

Each run is its own: name, id, folder paths, settings (learning rate, batch size, seed), times
and metric values differ from every other's, as a real year's do; no file is shared. The long run is the newest (the one the Training screen selects):
a `begin`, then one `log` event per step with the recording's fields and values that drift and
spike, an `eval` and a `save` every 10,000 steps, and the `summary` and `end` of a finished run.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
RECORDED = next((ROOT / "tests" / "jobs" / "data" / "runs").iterdir())
LONG_ID = "20261130-235959-long-pretrain-ffff"


def copy_id(i: int) -> str:
    """The i-th copy's id: a day and time of 2026 (ids sort oldest first, as the panel expects)."""
    day, minute = divmod(i, 24 * 60)
    return f"2026{1 + day // 28:02d}{1 + day % 28:02d}-{minute // 60:02d}{minute % 60:02d}00-demo-fine-tune-{i:04x}"


def write_long_run(folder: Path, steps: int) -> None:
    """A finished run of `steps` steps, one `log` line each (written in blocks, not line by line)."""
    folder.mkdir(parents=True, mode=0o700)
    spec = (RECORDED / "spec.toml").read_text().replace('name = "demo fine-tune"', 'name = "long pretrain"')
    (folder / "spec.toml").write_text(spec.replace("max_steps = 200", f"max_steps = {steps}"))
    status = json.loads((RECORDED / "status.json").read_text())
    status["ended"] = status["started"] + steps * 0.25
    (folder / "status.json").write_text(json.dumps(status, indent=1))
    (folder / "stdout.log").write_bytes((RECORDED / "stdout.log").read_bytes())
    rng = random.Random(28)
    start = float(status["started"])
    with (folder / "metrics.jsonl").open("w", encoding="utf-8") as out:
        out.write(
            json.dumps({"event": "begin", "time": start, "step": 0, "max_steps": steps, "world_size": 1})
        )
        out.write("\n")
        block: list[str] = []
        for step in range(1, steps + 1):
            loss = 3.6 / (1 + step / 2000) + rng.random() * 0.05 + (2.5 if step % 97_001 == 0 else 0.0)
            block.append(
                f'{{"event":"log","time":{start + step * 0.25:.4f},"step":{step},"max_steps":{steps},'
                f'"loss":{loss:.6f},"grad_norm":{0.3 + rng.random():.6f},"learning_rate":{2e-3 * (1 - step / steps):.8f},'
                f'"epoch":{step / 9:.4f},"samples_per_s":{12 + rng.random() * 4:.4f},'
                f'"tokens_per_s":{500 + rng.random() * 100:.3f},"memory_mib":{560 + rng.random() * 20:.3f}}}'
            )
            if step % 10_000 == 0:
                block.append(
                    json.dumps(
                        {"event": "eval", "time": start + step * 0.25, "step": step, "eval_loss": loss}
                    )
                )
                block.append(
                    json.dumps(
                        {
                            "event": "save",
                            "time": start + step * 0.25,
                            "step": step,
                            "checkpoint": f"checkpoint-{step}",
                        }
                    )
                )
            if len(block) >= 20_000:
                out.write("\n".join(block) + "\n")
                block = []
        end = start + steps * 0.25
        block.append(
            json.dumps(
                {"event": "summary", "time": end, "step": steps, "max_steps": steps, "train_loss": 0.4}
            )
        )
        block.append(
            json.dumps({"event": "end", "time": end, "step": steps, "max_steps": steps, "stopped": False})
        )
        out.write("\n".join(block) + "\n")


def keep_series(folder: Path) -> float:
    """What the run's supervisor did as the job ran (core/jobs/series_keeper.py): the Training charts'
    series kept in the run folder; returns the CPU seconds it cost, all at once here."""
    from gaudi_tui.core.jobs.series import ChartSeries
    from gaudi_tui.core.jobs.series_keeper import catch_up

    began = time.process_time()
    series = ChartSeries(folder / "metrics.jsonl", keeper=True)
    catch_up(series)
    series.save_now()
    return time.process_time() - began


def _distinct_copy(i: int, target: Path) -> None:
    """The recording as the i-th run of a year: its own name, id, folder paths and settings (learning
    rate, batch size, seed), times shifted to its day, and its own metrics values, so no memo or page
    cache sees the same spec line or file twice (hard links of one run made every spec after the
    first a memo hit and the page cache hold one file)."""
    target.mkdir(mode=0o700)
    rng = random.Random(i)
    lr, batch, seed = (1 + i % 9) * 1e-4 * 2, 8 * (1 + i % 4), 1000 + i
    spec = (RECORDED / "spec.toml").read_text()
    spec = spec.replace('name = "demo fine-tune"', f'name = "demo fine-tune {i}"')
    spec = spec.replace("learning_rate = 0.002", f"learning_rate = {lr:g}")
    spec = spec.replace("batch_size = 16", f"batch_size = {batch}").replace("seed = 42", f"seed = {seed}")
    (target / "spec.toml").write_text(spec)
    shift = (i + 1) * 3600.0 - 400 * 86400.0  # a run an hour apart, within the year before the recording
    status = json.loads((RECORDED / "status.json").read_text().replace("{RUN}", str(target)))
    for key in ("created", "queued", "started", "ended"):
        status[key] += shift
    status["supervisor"]["pid"] = status["launcher"]["pid"] = 10_000 + i
    (target / "status.json").write_text(json.dumps(status, indent=1))
    (target / "stdout.log").write_text((RECORDED / "stdout.log").read_text().replace("{RUN}", str(target)))
    lines = []
    for line in (RECORDED / "metrics.jsonl").read_text().splitlines():
        event = json.loads(line)
        event["time"] += shift
        if "loss" in event:
            event["loss"] *= 0.8 + 0.4 * rng.random()
        if "learning_rate" in event:
            event["learning_rate"] *= lr / 0.002
        lines.append(json.dumps(event, separators=(",", ":")))
    (target / "metrics.jsonl").write_text("\n".join(lines) + "\n")


def make_runs(runs_dir: Path, count: int, long_steps: int, pool: Path) -> float | None:
    """`count` runs in `runs_dir`: count - 1 distinct runs made from the recording and the long run
    (written once in `pool` with the series its supervisor keeps, copied into every size); the CPU
    seconds that keeping cost, when it was written now."""
    long_run = pool / LONG_ID
    kept_cpu = None
    if not long_run.exists():
        write_long_run(long_run, long_steps)
        kept_cpu = keep_series(long_run)
    runs_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    for i in range(count - 1):
        _distinct_copy(i, runs_dir / copy_id(i))
    try:  # one long run per history: links save its 250 MB per size where the disk allows
        shutil.copytree(long_run, runs_dir / LONG_ID, copy_function=os.link)
    except (OSError, shutil.Error):
        shutil.rmtree(runs_dir / LONG_ID, ignore_errors=True)
        shutil.copytree(long_run, runs_dir / LONG_ID)
    return kept_cpu
