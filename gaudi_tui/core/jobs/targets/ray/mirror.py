"""The job's log stream split into the run folder: metrics.jsonl, stdout.log, ranks."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import deque

from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.targets.ray.record import ClusterRecord
from gaudi_tui.core.jobs.worker.logstream import METRIC_PREFIX, RANK_PREFIX

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class LogMirror:
    """Splits the job's log stream: metrics lines → metrics.jsonl, rank lines → cluster.json,
    the rest → stdout.log (without colour codes). Exact repeats of a metrics line are dropped
    (Ray can forward a line twice when nodes share a host's log folder)."""

    def __init__(self, run: RunFolder, record: ClusterRecord) -> None:
        self.run = run
        self.record = record
        self.consumed = 0
        self.partial = ""
        self.lock = threading.Lock()
        self.seen: deque[str] = deque(maxlen=4096)
        self.seen_set: set[str] = set()
        self.ranks: dict[str, dict[str, str]] = dict(record.ranks)

    def feed(self, text: str) -> None:
        with self.lock:
            self.consumed += len(text)
            data = self.partial + text
            *lines, self.partial = data.split("\n")
            self._write(lines)

    def feed_from(self, full: str) -> None:
        """Feed whatever of the whole log (`get_job_logs`) the stream has not delivered yet."""
        with self.lock:
            missing = full[self.consumed :]
        if missing:
            self.feed(missing)

    def flush_partial(self) -> None:
        with self.lock:
            if self.partial:
                self._write([self.partial])
                self.partial = ""

    def _write(self, lines: list[str]) -> None:
        plain: list[str] = []
        metrics: list[str] = []
        for raw in lines:
            line = _ANSI.sub("", raw).rstrip("\r")
            if METRIC_PREFIX in line:
                payload = line.split(METRIC_PREFIX, 1)[1].strip()
                digest = hashlib.blake2b(payload.encode(), digest_size=12).hexdigest()
                if digest not in self.seen_set and _is_object(payload):
                    if len(self.seen) == self.seen.maxlen:
                        self.seen_set.discard(self.seen[0])
                    self.seen.append(digest)
                    self.seen_set.add(digest)
                    metrics.append(payload)
            elif RANK_PREFIX in line:
                self._rank(line.split(RANK_PREFIX, 1)[1])
            else:
                plain.append(line)
        if plain:
            with self.run.log_path.open("a", encoding="utf-8") as fh:
                fh.write("".join(p + "\n" for p in plain))
        if metrics:
            with self.run.metrics_path.open("a", encoding="utf-8") as fh:
                fh.write("".join(m + "\n" for m in metrics))

    def _rank(self, payload: str) -> None:
        try:
            info = json.loads(payload)
            self.ranks[str(int(info["rank"]))] = {
                "node_id": str(info.get("node_id", "")),
                "node_ip": str(info.get("node_ip", "")),
            }
        except (ValueError, KeyError, TypeError):
            return


def _is_object(payload: str) -> bool:
    try:
        return isinstance(json.loads(payload), dict)
    except ValueError:
        return False
