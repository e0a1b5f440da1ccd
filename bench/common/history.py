"""A year of runs, generated: copies of the real finished run of tests/jobs/data/runs/ (new ids),
and one long run logging every step, as a run folder of this version lays them out.

The copies keep the recording's spec.toml, status.json, metrics.jsonl and stdout.log byte for byte
(hard links where the disk allows). The long run is the newest (the one the Training screen selects):
a `begin`, then one `log` event per step with the recording's fields and values that drift and
spike, an `eval` and a `save` every 10,000 steps, and the `summary` and `end` of a finished run.
"""

from __future__ import annotations

import json
import os
import random
import shutil
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


def _link_tree(source: Path, target: Path) -> None:
    target.mkdir(mode=0o700)
    for child in source.iterdir():
        try:
            os.link(child, target / child.name)
        except OSError:
            shutil.copy2(child, target / child.name)


def make_runs(runs_dir: Path, count: int, long_steps: int, pool: Path) -> None:
    """`count` runs in `runs_dir`: count - 1 copies of the recording and the long run (from `pool`,
    where the long run is written once and shared by every size)."""
    long_run = pool / LONG_ID
    if not long_run.exists():
        write_long_run(long_run, long_steps)
    runs_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    for i in range(count - 1):
        _link_tree(RECORDED, runs_dir / copy_id(i))
    _link_tree(long_run, runs_dir / LONG_ID)
