"""Gaudi insight: the cost of tailing the runtime's metrics files, per refresh, and the memory kept.

What the Training screen's insight worker does every refresh (`InsightPanel`, once a second):
`InsightWatcher.poll()` and `.insight()` on a run folder whose metrics file is being written.
Two files, written here as Intel's saver writes them (tests/fakes/hpu_runtime/hpu_metrics_saver.py):

1. GC details (`PT_HPU_METRICS_GC_DETAILS=1`): every `graph_compilation` object repeats the whole
   `recipe` list, so the file grows quadratically (`--mb`, default 500 MB);
2. 10,000 objects without details (graph_compilation and cpu_fallback, as metric_change writes).

For each: the first read to the end (CPU seconds), then `REFRESHES` refreshes while the file keeps
growing (one new object per refresh, as a job compiling a graph a second would): CPU per refresh
(median, min–max) as a share of one core at one refresh a second, and the memory the reader keeps
afterwards (tracemalloc, in a separate pass). Target: ≤ 2 % of a core, memory bounded.
This measures the worker's reads, not the whole panel's drawing.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import tracemalloc
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
from common.figures import load, spread  # noqa: E402
from common.home import own_home  # noqa: E402

REFRESHES = 30
REFRESH_S = 1.0


class Writer:
    """The saver's JSON layout: `[`, objects joined by `,\\n`, no `]` while the job runs."""

    def __init__(self, path: Path) -> None:
        self.out = path.open("w", encoding="utf-8")
        self.out.write("[")
        self.first = True
        self.recipes: list[list[object]] = []
        self.graphs = 0

    def obj(self, name: str, stats: dict) -> None:
        data = {"metric_name": name, "triggered_by": "metric_change",
                "generated_on": datetime.now().isoformat(), "statistics": stats}  # fmt: skip
        self.out.write(("" if self.first else ",\n") + json.dumps(data))
        self.first = False

    def compile(self, details: bool) -> None:
        self.graphs += 1
        self.recipes.append([f"recipe_{self.graphs % 97}_{self.graphs}", 1000 + self.graphs % 500])
        stats: dict[str, object] = {
            "TotalNumber": self.graphs,
            "TotalTime": self.graphs * 1000,
            "AvgTime": 1000,
        }
        if details:
            stats["recipe"] = self.recipes
        self.obj("graph_compilation", stats)

    def flush(self) -> None:
        self.out.flush()


def make_run(folder: Path) -> object:
    from gaudi_tui.core.jobs import runfolder
    from gaudi_tui.core.jobs.spec import JobSpec

    return runfolder.create(JobSpec(name="bench", device="hpu", max_steps=0), accelerator="hpu")


def measure(label: str, fill, grow) -> None:  # noqa: ANN001 - two small closures
    from gaudi_tui.core.jobs.insight.report import InsightWatcher

    run = make_run(Path())
    writer = Writer(run.hpu_metrics_path)  # type: ignore[attr-defined]
    fill(writer)
    writer.flush()
    size = run.hpu_metrics_path.stat().st_size  # type: ignore[attr-defined]
    watcher = InsightWatcher(run)  # type: ignore[arg-type]
    start = time.process_time()
    watcher.poll(catch_up=True)
    watcher.insight()
    first = time.process_time() - start
    per: list[float] = []
    for _ in range(REFRESHES):
        grow(writer)
        writer.flush()
        start = time.process_time()
        watcher.poll()
        watcher.insight()
        per.append(time.process_time() - start)
    graphs = watcher.runtime.ranks()[0].graphs
    print(f"{label}: {size / 2**20:.0f} MB, {graphs} graphs ({load()})")
    print(f"  first read to the end: {first:.2f} CPU s")
    print(f"  per refresh: {spread([p * 1000 for p in per], '{:.2f}')} ms CPU "
          f"= {spread([100 * p / REFRESH_S for p in per], '{:.2f}')} % of a core at 1 refresh/s")  # fmt: skip
    del watcher
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = InsightWatcher(run)  # type: ignore[arg-type]
    kept.poll(catch_up=True)
    kept.insight()
    gc.collect()
    print(f"  memory kept by the reader: {(tracemalloc.get_traced_memory()[0] - before) / 2**20:.2f} MiB")
    tracemalloc.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=500, help="size of the GC-details file (MB)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    # the n-th object holds n recipes of about 24 bytes each: the file is about 12·n² bytes
    compiles = int((args.mb * 2**20 / 12) ** 0.5)

    def fill_details(w: Writer) -> None:
        for _ in range(compiles):
            w.compile(details=True)

    def fill_plain(w: Writer) -> None:
        for i in range(10_000):
            w.compile(details=False) if i % 4 else w.obj(
                "cpu_fallback", {"TotalNumber": i, "FallbackOps": {"aten::x": i}}
            )

    measure("GC details", fill_details, lambda w: w.compile(details=True))
    measure("10,000 objects", fill_plain, lambda w: w.compile(details=False))
    return 0


if __name__ == "__main__":
    own_home()
    sys.exit(main())
