"""Where the job's own events go, one JSON object each (standard library only: the wrapper of a
user's plain loop imports it without transformers): `metrics.jsonl` in the run folder (local jobs),
or prefixed lines on stdout that Ray carries to the job's log (the supervisor mirrors them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

from gaudi_tui.core.jobs.worker.logstream import METRIC_PREFIX


class Sink(Protocol):
    def write(self, event: dict[str, object]) -> None: ...

    def close(self) -> None: ...


class FileSink:
    """metrics.jsonl, written whole lines at a time (one write and flush per event, appended: the
    command's output follower appends to the same file)."""

    def __init__(self, path: Path) -> None:
        self.out = path.open("a", encoding="utf-8")

    def write(self, event: dict[str, object]) -> None:
        self.out.write(json.dumps(event, separators=(",", ":")) + "\n")
        self.out.flush()

    def close(self) -> None:
        self.out.close()


class LogStreamSink:
    """Prints each event as one prefixed line on stdout: Ray carries it to the job's log."""

    def write(self, event: dict[str, object]) -> None:
        print(METRIC_PREFIX + json.dumps(event, separators=(",", ":")), flush=True)

    def close(self) -> None:
        pass
