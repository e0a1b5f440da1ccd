"""A generated Slurm queue of N jobs that changes between polls, printed as squeue prints it in
both forms (`squeue --json`, and the poll's text form with a separator of its own each call): the
jobs of one real 22.05.8 moment recorded twice (tests/data/slurm/squeue_fields.json and
squeue_fields.txt, the same 18 jobs) copied with new ids. bench/slurm_queue.py and
bench/slurm_keys.py share it."""

from __future__ import annotations

import json
import random
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "slurm"
RECORDED_SEP = "|5eb2a0c4d19f7e38|"
"""The separator squeue_fields.txt was printed with."""
REASON = 6
"""The state reason's place in a text record (queue_fields.FIELDS)."""


class Queue:
    """A queue of `jobs` jobs that a poll changes, printed in either form."""

    def __init__(self, jobs: int) -> None:
        from gaudi_tui.core.slurm import queue_fields

        self.fields = queue_fields
        real = json.loads((DATA / "squeue_fields.json").read_text())
        values = (DATA / "squeue_fields.txt").read_text().split(RECORDED_SEP)
        width = queue_fields.WIDTH
        records = {
            int(v[0].lstrip("\n")): [v[0].lstrip("\n"), *v[1:]]
            for v in (values[i : i + width] for i in range(0, len(values) - 1, width))
        }
        self.head = {k: v for k, v in real.items() if k != "jobs"}
        self.jobs, self.records = [], []
        for i in range(jobs):
            row = dict(real["jobs"][i % len(real["jobs"])])
            record = list(records[row["job_id"]])
            row["job_id"] = 1000 + i
            record[0] = str(1000 + i)
            self.jobs.append(row)
            self.records.append(record)
        self.rng = random.Random(28)
        self.tick = 0

    def change(self, share: float, shown: float) -> None:
        """`share` of the jobs get a new `last_sched_evaluation`, `shown` of them a new state reason."""
        self.tick += 1
        for row, record in zip(self.jobs, self.records, strict=True):
            if self.rng.random() < share:
                row["last_sched_evaluation"] = 1_796_000_000 + self.tick
            reason = None
            if shown >= 1:
                reason = f"Priority ({self.tick})"  # new at every answer
            elif self.rng.random() < shown:
                reason = self.rng.choice(["Resources", "Priority", "Dependency", "None"])
            if reason is not None:
                row["state_reason"] = record[REASON] = reason

    def json_text(self) -> str:
        return json.dumps({**self.head, "jobs": self.jobs}, indent=2)

    def text(self, sep: str | None = None) -> tuple[str, str]:
        """The text form and its separator (`sep`, as squeue was asked for, or a new one)."""
        sep = sep or self.fields.separator()
        return "".join(sep.join(r) + sep + "\n" for r in self.records), sep
