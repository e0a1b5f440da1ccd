"""Why a job waits, in words: Slurm's `state_reason` codes for a person."""

from __future__ import annotations

import time

from gaudi_tui.core.slurm.model import QueueJob

_SIMPLE = {
    "Priority": "waiting behind jobs of higher priority on partition {partition}",
    "Dependency": "waiting for its dependency ({dependency}) to be satisfied",
    "DependencyNeverSatisfied": "can never start: its dependency ({dependency}) can no longer be satisfied",
    "JobHeldUser": "held by its user (release it with `scontrol release {job_id}`)",
    "JobHeldAdmin": "held by an administrator",
    "PartitionDown": "partition {partition} is down",
    "PartitionInactive": "partition {partition} is inactive",
    "PartitionNodeLimit": "asks for more nodes than partition {partition} allows",
    "PartitionTimeLimit": "asks for more time than partition {partition} allows",
    "ReqNodeNotAvail": "a node it needs is not available (down, drained or reserved)",
    "NodeDown": "a node it needs is down",
    "BadConstraints": "can never run: no node of partition {partition} has what it asks for",
    "JobArrayTaskLimit": "waiting: the array's limit of tasks running at once is reached",
    "QOSMaxGRESPerUser": "waiting: your QOS allows no more cards at once",
    "AssocGrpGRES": "waiting: your account's card limit is reached",
    "QOSMaxJobsPerUserLimit": "waiting: your QOS allows no more running jobs",
    "AssocMaxJobsLimit": "waiting: your account allows no more running jobs",
    "Reservation": "waiting for its reservation to start",
    "Licenses": "waiting for licenses",
    "launch failed requeued held": "held after a failed launch (release it with `scontrol release {job_id}`)",
    "None": "waiting for the scheduler's first look",
}


def pending_words(job: QueueJob, now: float | None = None) -> str:
    """`waiting for 8 free cards on partition main`, `waiting for 2 nodes with 8 free cards each on
    partition main`, `held by its user ...`; the code itself when it has no words here."""
    reason = job.reason
    if reason == "Resources":
        if job.cards_per_node and job.node_count > 1:
            need = f"{job.node_count} nodes with {job.cards_per_node} free cards each"
        elif job.cards_per_node:
            need = f"{job.cards_per_node} free {'card' if job.cards_per_node == 1 else 'cards'}"
        elif job.node_count > 1:
            need = f"{job.node_count} free nodes"
        else:
            need = "free resources"
        return f"waiting for {need} on partition {job.partition}"
    if reason == "BeginTime":
        start = job.start_time
        when = (
            time.strftime("%H:%M:%S", time.localtime(start))
            if start and start > (now or time.time())
            else None
        )
        again = " (requeued: Slurm holds a requeued job about 2 minutes)" if job.restarts else ""
        return f"not eligible before {when}{again}" if when else f"waiting for its begin time{again}"
    words = _SIMPLE.get(reason)
    if words is None:
        return reason
    return words.format(partition=job.partition, dependency=job.dependency or "?", job_id=job.job_id)


def state_words(job: QueueJob, now: float | None = None) -> str:
    """One line for a job: its state, and why when it waits or failed."""
    if job.state == "PENDING":
        return f"pending: {pending_words(job, now)}"
    if job.state == "RUNNING":
        return f"running on {','.join(job.nodes) or '?'}"
    if job.exit_signal:
        return f"{job.state.lower()} (signal {job.exit_signal})"
    if job.exit_status:
        return f"{job.state.lower()} (exit {job.exit_status})"
    if job.reason not in ("None", ""):
        return f"{job.state.lower()} ({job.reason})"
    return job.state.lower()
