"""Graph-compilation counts from the Gaudi runtime's metrics file (`PT_HPU_METRICS_FILE`).

With `PT_HPU_METRICS_DUMP_TRIGGERS=process_exit,metric_change` and the JSON format, the runtime
keeps a JSON array of `{"metric_name", "generated_on", "triggered_by", "statistics"}` objects,
appended as metrics change, so while the job runs the closing `]` is missing. When `RANK` is set
(torchrun, accelerate) the runtime inserts `-rank<N>` before the suffix: `hpu_metrics-rank0.json`.
"""

from __future__ import annotations

import json
from pathlib import Path


def rank_file(path: Path, rank: int) -> Path:
    return path.with_name(f"{path.stem}-rank{rank}{path.suffix}")


def parse(text: str) -> list[dict]:
    """The metric objects of a dump, complete or still being written."""
    body = text.strip()
    if not body:
        return []
    for candidate in (body, body.rstrip(",") + "]", body.rstrip(",") + "}]"):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []
    return []


def graph_compilations(path: Path) -> int | None:
    """The latest `graph_compilation` TotalNumber of rank 0 (or the only process), or None."""
    for candidate in (rank_file(path, 0), path):
        try:
            text = candidate.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        counts = [
            int(m["statistics"]["TotalNumber"])
            for m in parse(text)
            if m.get("metric_name") == "graph_compilation" and "TotalNumber" in (m.get("statistics") or {})
        ]
        if counts:
            return max(counts)
    return None
