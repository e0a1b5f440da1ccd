"""Ray target: submit a job to a Ray cluster through the Jobs SDK and mirror it into the run folder.

Everything goes through the dashboard's HTTP port (the one an SSH tunnel forwards), so no shared
filesystem between the panel and the cluster is assumed for watching a job:
- `nodes`: nodes and free resources (the dashboard's REST API);
- `checks`: the spec prepared for the cluster and checked against its nodes;
- `cluster`: the Jobs SDK (submit, status, stop) and the state API (what is left of a job);
- `record`: `cluster.json`, where the job runs (address, submission id, Ray job id, rank nodes);
- `mirror`: rank 0 prints metrics as prefixed lines (`worker/sinks.LogStreamSink`); the
  mirror splits the log stream into `metrics.jsonl` and `stdout.log`;
- `supervise`: the supervisor's side: submit or re-attach, watch, act on STOP and kill, record.
Graceful stop: a tiny second job writes a flag into Ray's internal KV store, which rank 0 of the
training job polls (Ray's own `stop_job` gives a job 3 s before SIGKILL: too short to save).
Checkpoints go to `storage_path` on the cluster (a folder every node reaches).
What the entry point is comes from the job's kind (`Kind.cluster_entry`): the built-in job's
`worker/ray_train.py` (a TorchTrainer), or your command's `worker/ray_command.py` on one node.
"""

from __future__ import annotations

import threading
from pathlib import Path

from gaudi_tui.core.jobs import kinds
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus
from gaudi_tui.core.jobs.tailing import MetricsReader
from gaudi_tui.core.jobs.targets import Attempt, Host, Presence
from gaudi_tui.core.jobs.targets.ray import checks, cluster, nodes, record
from gaudi_tui.core.jobs.validate import Problem


class RayTarget:
    name = "ray"
    runs_here = False
    starts_ranks = False
    remote_files = True

    def check(self, spec: JobSpec, host: Host) -> tuple[JobSpec, list[Problem]]:
        return checks.check(spec, host.env_fixes)

    def label(self, spec: JobSpec) -> str:
        return f"ray:{spec.device}"

    def summary(self, spec: JobSpec) -> str:
        if words := kinds.for_spec(spec).cluster_entry(spec).words:
            return f"the Ray cluster {spec.ray_address} ({spec.device}: {words})"
        return f"the Ray cluster {spec.ray_address} ({spec.workers} worker(s) on {spec.device})"

    def supervise(self, attempt: Attempt) -> int:
        from gaudi_tui.core.jobs.targets.ray.supervise import Supervision

        return Supervision(attempt).supervise()

    def request_stop(self, run: RunFolder) -> None:
        run.request_stop()  # the supervisor raises the cluster's stop flag when it sees STOP

    def kill(self, run: RunFolder, status: JobStatus, cancel: threading.Event | None) -> str:
        return cluster.kill_orphan(run)

    def presence(self, run: RunFolder, status: JobStatus) -> Presence:
        """Asks the cluster (bounded): a job it runs can be re-attached, and so can one that ended
        while no supervisor watched (its end is mirrored); no answer is `unknown`."""
        rec = record.read_record(run)
        if rec is None:
            return Presence("ended", "it was never submitted to the cluster")
        try:
            info = cluster.Jobs(rec.address).info(rec.submission_id)
        except cluster.JobGone as exc:
            try:  # "does not exist" speaks for the job only on the cluster it was submitted to
                other = cluster.other_cluster(rec)
            except nodes.ClusterError as again:
                return Presence("unknown", str(again))
            return Presence("unknown", other) if other is not None else Presence("ended", str(exc))
        except nodes.ClusterError as exc:
            return Presence("unknown", str(exc))
        if info.state in cluster.LIVE:
            return Presence(
                "running", f"Ray job {rec.submission_id} is {info.state} on the cluster", attach=True
            )
        return Presence(
            "ended", f"Ray job {rec.submission_id} ended {info.state} on the cluster", attach=True
        )

    def newest_checkpoint(self, run: RunFolder) -> Path | None:
        """From the mirrored `save` events: the checkpoints live in storage_path on the cluster."""
        metrics = MetricsReader(run.metrics_path)
        metrics.poll()
        return Path(metrics.last_checkpoint) if metrics.last_checkpoint else None

    def where(self, run: RunFolder) -> str:
        """Address, ids and the nodes of the ranks, from cluster.json."""
        rec = record.read_record(run)
        if rec is None:
            return "Ray (not submitted yet)"
        ranks = sorted(rec.ranks.items(), key=lambda kv: int(kv[0]))
        where = ", ".join(f"{r}@{v.get('node_ip', '?')}/{v.get('node_id', '')[:8]}" for r, v in ranks)
        job = f" (Ray job {rec.ray_job_id})" if rec.ray_job_id else ""
        return f"{rec.address} · {rec.submission_id}{job}" + (f" · ranks {where}" if where else "")

    def details(self, run: RunFolder) -> str:
        """The cluster's nodes now, or as last seen when the cluster cannot be reached."""
        rec = record.read_record(run)
        if rec is None:
            return ""
        try:
            return nodes.format_nodes(nodes.list_nodes(rec.address))
        except nodes.ClusterError as exc:
            if not rec.nodes_seen:
                return f"nodes: {exc}"
            seen = [nodes.Node(**n) for n in rec.nodes_seen]
            return f"nodes when the job ended (the cluster does not answer now):\n{nodes.format_nodes(seen)}"


TARGET = RayTarget()
