"""The Slurm screen's queue poll with 1,000 and 10,000 jobs whose answers change at every poll (issue
28, item 3; issue 41, item 4): the panel's CPU per refresh ÷ the 2 s refresh, target ≤ 2 % of a core.

The answers are GENERATED from one real 22.05.8 moment recorded twice: tests/data/slurm/
squeue_fields.json (`squeue --json`) and squeue_fields.txt (the poll's text form, the same 18
jobs: running, pending, held, array, requeued, failed, cancelled, odd names). Their jobs are copied
with new ids to 1,000 or 10,000 (bench/common/slurm_answers.py), in both forms alike, and laid out as Slurm prints them (JSON: two-space
indent; text: a new random separator at every answer, as each real call draws one). Before every
poll the queue changes: "some change": a tenth of the jobs get a new `last_sched_evaluation` (what
the scheduler's passes rewrite; only JSON has it) and one job in fifty a new state reason; "every
job changes": every job a new `last_sched_evaluation` (the text answer then differs only in its
separator); "every row changes": every job also a new state reason, a field the screen shows (the
worst case: every job read again). Each refresh is timed (`process_time`) from the answer's text to
the shared file's bytes (what the poll writes for the other processes: `Snapshot.file_bytes`), the
screen's order of the listed jobs (`table.order`, from each job's id, user and state), the rows of
one screen (the first WINDOW of that order: the 100 rows the screen's table holds) and the nodes, through three paths, each from its own form
of the same answer:

- `text form` (the poll now: `queue_fields.jobs`: each job's id, user and state read from every
  answer, the rest of a job decoded when first read, so only the 100 shown here; the file holds the
  answer's text);
- `json by job` (the poll before: `queue_text.jobs_from_text`, changed jobs' lines patched; the file
  held every decoded job, `dataclasses.asdict`);
- `whole decode` (`json.loads` + `model.jobs_from_json`, the path before that; the same file).

Each figure: the CPU of one refresh, median (min–max) over BLOCKS × REFRESHES refreshes, and that
over the 2 s refresh as a share of one core (the target ≤ 2 % is for the text form at 1,000 and at
10,000 jobs, and printed met or NOT met beside it).

BLOCKS blocks of each, alternating, each of WARMUP answers (not counted: they warm that path's own
caches) and REFRESHES timed ones. `new ÷ old` is the text form's median over json by job's.
Not timed: reading the answer from squeue's pipe (0.5 MB of text against 2.6 MB of JSON at 1,000 jobs;
5.3 MB of text at 10,000).
At 10,000 jobs only the text form (the poll now) is timed: the older paths were there for the ratio.
BENCH_JOBS (e.g. 1000 or 1000,10000) picks the sizes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
sys.path.insert(0, str(ROOT))
from common.figures import load, spread  # noqa: E402
from common.slurm_answers import DATA, Queue  # noqa: E402

from gaudi_tui.ui.widgets.window_table import WINDOW  # noqa: E402 - the rows the screen's table holds

if TYPE_CHECKING:
    from gaudi_tui.core.slurm.queue_jobs import QueueJobs

SIZES = tuple(int(n) for n in os.environ.get("BENCH_JOBS", "1000,10000").split(","))
BLOCKS = 3
WARMUP = 2
REFRESHES = 10
REFRESH_S = 2.0


def refresh(
    parse: Callable[[], QueueJobs], write: Callable[[QueueJobs], str | bytes], nodes_text: str
) -> float:
    from gaudi_tui.core.slurm import model, table

    start = time.process_time()
    jobs = parse()
    write(jobs)  # the shared file's text (written for the other processes)
    nodes = model.nodes_from_json(json.loads(nodes_text))
    shown = table.order(jobs, "root")  # the screen's order, from each job's brief
    rows = [table.queue_row(jobs[i]) for i in shown[:WINDOW]]  # what the screen's table holds
    rows += [table.node_row(n) for n in nodes]
    return time.process_time() - start


def main() -> int:
    from gaudi_tui.core.slurm import model, poll, queue_fields
    from gaudi_tui.core.slurm.queue_jobs import QueueJobs
    from gaudi_tui.core.slurm.queue_text import jobs_from_text

    def text_form(queue: Queue) -> tuple[Callable[[], QueueJobs], Callable[[QueueJobs], str | bytes]]:
        answer = queue_fields.Answer(*queue.text())

        def file(jobs: QueueJobs) -> bytes:
            return poll.Snapshot(0.0, jobs, answer=answer).file_bytes()

        return answer.jobs, file

    def by_job(queue: Queue) -> tuple[Callable[[], QueueJobs], Callable[[QueueJobs], str | bytes]]:
        text = queue.json_text()
        return lambda: QueueJobs(jobs_from_text(text)), jobs_file

    def whole(queue: Queue) -> tuple[Callable[[], QueueJobs], Callable[[QueueJobs], str | bytes]]:
        text = queue.json_text()
        return lambda: QueueJobs(model.jobs_from_json(json.loads(text))), jobs_file

    def jobs_file(jobs: QueueJobs) -> str:
        """What the poll wrote before: every decoded job (poll.Snapshot.to_json of then)."""
        return json.dumps({"jobs": [dataclasses.asdict(j) for j in jobs]}, separators=(",", ":"))

    nodes_text = (DATA / "sinfo.json").read_text()
    cases = (("some change", 0.1, 0.02), ("every job changes", 1.0, 0.0), ("every row changes", 1.0, 1.0))
    for size in SIZES:
        print(
            f"slurm queue: {size:,} jobs (generated from a real 22.05.8 moment), answers changing at every poll; {load()}"
        )
        paths = {"text form": text_form, "json by job": by_job, "whole decode": whole}
        if size > 1000:
            paths = {"text form": text_form}
        for case, share, shown in cases:
            costs: dict[str, list[float]] = {name: [] for name in paths}
            for _ in range(BLOCKS):  # blocks alternate; each path's first answers warm its own caches
                for name, answer in paths.items():
                    queue = Queue(size)
                    for timed in [False] * WARMUP + [True] * REFRESHES:
                        queue.change(share, shown)
                        cost = refresh(*answer(queue), nodes_text)  # the answer's printing is not timed
                        if timed:
                            costs[name].append(cost)
            for path, values in costs.items():
                share_pct = [v / REFRESH_S * 100 for v in values]
                met = ": met" if statistics.median(share_pct) <= 2 else ": NOT met"
                print(f"  {case:<18} {path:<13} {spread([v * 1000 for v in values], '{:.1f}')} ms a refresh = "
                      f"{spread(share_pct, '{:.2f}')} % of a core at {REFRESH_S:g} s "
                      f"(target ≤ 2 %{met if path == 'text form' else ''})")  # fmt: skip
            if "json by job" in costs:
                ratio = statistics.median(costs["text form"]) / statistics.median(costs["json by job"])
                print(f"  {case:<18} new ÷ old     {ratio:.2f} (text form ÷ json by job, medians)")
    print(f"  at the end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
