"""The Slurm screen's queue poll with 1,000 jobs whose answers change at every poll (issue 28,
item 3): the panel's CPU per refresh ÷ the 2 s refresh, target ≤ 2 % of a core.

The answer is a GENERATED `squeue --json` of 1,000 jobs (the 9 real 22.05.8 job records of
tests/data/slurm/squeue_all.json, copied with new ids), laid out as Slurm prints it (two-space
indent). Before every poll it changes: in the "some change" case a tenth of the jobs get a new
`last_sched_evaluation` (what the scheduler's passes rewrite) and one job in fifty a new state
reason; in the "every job changes" case every job gets a new `last_sched_evaluation` (a field the
screen does not read, which the panel's path cuts before comparing); in the "every row changes"
case every job also gets a new state reason, a field the screen shows (the worst case: every job
parsed again). Each refresh is timed (`process_time`)
from the answer's text to the rows of one screen and the nodes, through the path the panel takes
(`queue_text.jobs_from_text`: only changed jobs decoded, a job whose own one-line fields changed
only from those lines) and through a whole-document decode
(`json.loads` + `model.jobs_from_json`, the path before it): BLOCKS blocks of each, alternating,
each of WARMUP answers (not counted: they warm that path's own caches) and REFRESHES timed ones.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
sys.path.insert(0, str(ROOT))
from common.figures import load, spread  # noqa: E402

DATA = ROOT / "tests" / "data" / "slurm"
JOBS = 1000
BLOCKS = 3
WARMUP = 2
REFRESHES = 10
REFRESH_S = 2.0


class Queue:
    """A 1,000-job answer that a poll changes."""

    def __init__(self) -> None:
        real = json.loads((DATA / "squeue_all.json").read_text())
        self.head = {k: v for k, v in real.items() if k != "jobs"}
        self.jobs = []
        for i in range(JOBS):
            row = dict(real["jobs"][i % len(real["jobs"])])
            row["job_id"] = 1000 + i
            self.jobs.append(row)
        self.rng = random.Random(28)
        self.tick = 0

    def answer(self, share: float, shown: float) -> str:
        """`share` of the jobs get a new `last_sched_evaluation`, `shown` of them a new state reason."""
        self.tick += 1
        for row in self.jobs:
            if self.rng.random() < share:
                row["last_sched_evaluation"] = 1_796_000_000 + self.tick
            if shown >= 1:
                row["state_reason"] = f"Priority ({self.tick})"  # new at every answer
            elif self.rng.random() < shown:
                row["state_reason"] = self.rng.choice(["Resources", "Priority", "Dependency", "None"])
        return json.dumps({**self.head, "jobs": self.jobs}, indent=2)


def refresh(parse: Callable[[str], list], text: str, nodes_text: str) -> float:
    from gaudi_tui.core.slurm import model, table

    start = time.process_time()
    jobs = parse(text)
    nodes = model.nodes_from_json(json.loads(nodes_text))
    rows = [table.queue_row(j) for j in table.mine(jobs, "root")[:60]]  # what one screen draws
    rows += [table.node_row(n) for n in nodes]
    return time.process_time() - start


def main() -> int:
    from gaudi_tui.core.slurm import model
    from gaudi_tui.core.slurm.queue_text import jobs_from_text

    def whole(text: str) -> list:
        return model.jobs_from_json(json.loads(text))

    nodes_text = (DATA / "sinfo.json").read_text()
    print(
        f"slurm queue: {JOBS} jobs (generated from real 22.05.8 records), answers changing at every poll; {load()}"
    )
    paths = {"jobs_from_text": jobs_from_text, "whole decode": whole}
    cases = (("some change", 0.1, 0.02), ("every job changes", 1.0, 0.0), ("every row changes", 1.0, 1.0))
    for case, share, shown in cases:
        costs: dict[str, list[float]] = {name: [] for name in paths}
        for _ in range(BLOCKS):  # blocks alternate; each path's first answers warm its own caches
            for name, parse in paths.items():
                queue = Queue()
                for _ in range(WARMUP):
                    refresh(parse, queue.answer(share, shown), nodes_text)
                costs[name] += [
                    refresh(parse, queue.answer(share, shown), nodes_text) for _ in range(REFRESHES)
                ]
        for path, values in costs.items():
            share_pct = [v / REFRESH_S * 100 for v in values]
            print(f"  {case:<18} {path:<15} {spread([v * 1000 for v in values], '{:.1f}')} ms a refresh = "
                  f"{spread(share_pct, '{:.2f}')} % of a core at {REFRESH_S:g} s (target ≤ 2 %)")  # fmt: skip
    print(f"  at the end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
