"""The job's supervisor keeps the Training charts' series of its run up to date as the job writes
metrics.jsonl, so that the first open of a long run's charts reads a small file and only the lines
after it, not a year of lines (issue 41, item 2).

A daemon thread reads what was appended every KEEP_S (`series.ChartSeries`, from a byte offset,
never re-read) and saves the bounded series into the run folder (`series_cache.KEPT`) whenever
SAVE_BYTES or more were read since the last save, and once more when the attempt ends (the supervisor calls `finish`). A
re-attached supervisor starts from the series kept before it. Its cost is the parse of each line
once, spread over the job's run, in the supervisor's process, not the user's training. A failure
goes to supervisor.log once and the keeping goes on; it never ends the supervisor.
"""

from __future__ import annotations

import sys
import threading
import traceback

from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.series import ChartSeries

KEEP_S = 2.0
FINISH_S = 10.0
"""How long the supervisor waits at the end for the last save (whatever is left, the panel reads)."""


class SeriesKeeper:
    """`start` the thread with the job; `finish` once the attempt has ended (its last save)."""

    def __init__(self, run: RunFolder, every_s: float = KEEP_S) -> None:
        self.series = ChartSeries(run.metrics_path, keeper=True)
        self.every_s = every_s
        self.ended = threading.Event()
        self.thread = threading.Thread(target=self._keep, name="series-keeper", daemon=True)

    def start(self) -> SeriesKeeper:
        self.thread.start()
        return self

    def finish(self, timeout: float = FINISH_S) -> None:
        self.ended.set()
        self.thread.join(timeout)

    def _keep(self) -> None:
        failing = False
        while True:
            ended = self.ended.is_set()
            try:
                catch_up(self.series)
                if ended:
                    self.series.save_now()
            except Exception:  # noqa: BLE001 - the charts' series must never end the supervisor
                if not failing:
                    print(f"series: cannot keep the charts' series (tried again at each poll):\n"
                          f"{traceback.format_exc()}", file=sys.stderr, flush=True)  # fmt: skip
                failing = True
            else:
                failing = False
            if ended:
                return
            self.ended.wait(self.every_s)


def catch_up(series: ChartSeries) -> None:
    """Read everything appended so far (a long history in slices; the end saves past SAVE_BYTES)."""
    series.poll()
    while series.behind:
        series.poll()
