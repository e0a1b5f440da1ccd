"""`cluster.json`: where a Ray job runs (address, submission id, Ray job id, nodes of the ranks)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.untrusted.data import record
from gaudi_tui.core.untrusted.files import load_json, write_atomic


@dataclass(frozen=True)
class ClusterRecord:
    address: str
    submission_id: str
    attempt: int
    log_base: int = 0
    """Size of stdout.log before this attempt: a re-attach cuts back to it and mirrors afresh."""
    metrics_base: int = 0
    ray_job_id: str | None = None
    session: str = ""
    """The cluster's identity when the job was submitted (the dashboard's `session_name`, new with
    every head start): the same address may later reach another cluster, which does not know the
    job although it may run on on this one. '' = not known (records from before it was kept)."""
    entrypoint: str = ""
    ranks: dict[str, dict[str, str]] = field(default_factory=dict)
    """rank → {"node_id", "node_ip"} as each rank reported itself."""
    nodes_seen: list[dict[str, Any]] = field(default_factory=list)
    """The cluster's nodes when the attempt ended (shown when the cluster is gone)."""

    def nodes(self) -> list[str]:
        return sorted({v.get("node_id", "") for v in self.ranks.values()})


def cluster_path(run: RunFolder) -> Path:
    return run.path / "cluster.json"


def read_record(run: RunFolder) -> ClusterRecord | None:
    try:
        return record(ClusterRecord, load_json(cluster_path(run)), what="cluster.json")
    except (OSError, ValueError):
        return None


def write_record(run: RunFolder, record: ClusterRecord) -> None:
    write_atomic(cluster_path(run), json.dumps(asdict(record), indent=1))


def submission_id(run: RunFolder, attempt: int) -> str:
    return f"gaudi-tui-{run.id}-a{attempt}"
