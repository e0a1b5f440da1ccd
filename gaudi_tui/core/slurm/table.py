"""The queue and the nodes as rows of text and as JSON: what `gaudi-tui slurm` prints and the
Slurm screen shows (one place, so both say the same)."""

from __future__ import annotations

import getpass
import os
import time
from collections.abc import Iterable

from gaudi_tui.core.slurm.model import ENDED, QueueJob, SlurmNode
from gaudi_tui.core.slurm.queue_jobs import QueueJobs
from gaudi_tui.core.slurm.reasons import pending_words, state_words

QUEUE_COLUMNS = ("job", "name", "user", "state", "partition", "nodes", "cards", "elapsed", "left", "why")
NODE_COLUMNS = ("node", "state", "partitions", "cards", "used", "free", "cpus", "reason")


_CONTROLS = dict.fromkeys([*range(0x20), *range(0x7F, 0xA0)], "\ufffd")


def shown(text: str) -> str:
    """Text from the cluster as a row shows it: control characters (a newline, a tab, an escape
    sequence in a job's name, which anyone chooses) as U+FFFD, so no row breaks or drives the terminal."""
    return text.translate(_CONTROLS)


def me() -> str:
    """The user whose jobs "mine" means (Slurm's user_name for jobs submitted here)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return os.environ.get("USER", "")


def mine(jobs: Iterable[QueueJob], user: str | None = None) -> list[QueueJob]:
    who = user if user is not None else me()
    return [j for j in jobs if j.user == who]


def order(jobs: QueueJobs, user: str | None) -> list[int]:
    """The places in `jobs` of `user`'s jobs (everyone's for None) as the Slurm screen lists them,
    active jobs first, then by id: from each job's brief, so no job is decoded for it."""
    keyed = [
        (state in ENDED, job_id, i)
        for i, (job_id, who, state) in enumerate(jobs.briefs())
        if user in (None, who)
    ]
    keyed.sort()
    return [i for _, _, i in keyed]


def duration(seconds: float | None) -> str:
    """`—`, `42s`, `3:07`, `1:02:03`, `2-03:04:05` (Slurm's own day form)."""
    if seconds is None:
        return "—"
    s = int(seconds)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{s:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{s:02d}"
    return f"{minutes}:{s:02d}" if minutes else f"{s}s"


def why(job: QueueJob, now: float | None = None) -> str:
    if job.state == "PENDING":
        return pending_words(job, now)
    if job.state == "RUNNING":
        return ""
    words = state_words(job, now)
    return words.partition(" ")[2].strip("()") if " " in words else ""


def scancel_id(job: QueueJob) -> str:
    """What scancel must be given to end exactly this row: `12` for a job, `12_3` for one array
    task, `12_[2-3]` for an array's pending remainder (its `%2` throttle dropped: scancel refuses
    it). The record's own id is the array's id, and `scancel 12` would end its running tasks too."""
    if not job.array_task or not job.array_job_id:
        return str(job.job_id)
    task = job.array_task.partition("%")[0]
    return f"{job.array_job_id}_{task}" if task.isdigit() else f"{job.array_job_id}_[{task}]"


def queue_row(job: QueueJob, now: float | None = None) -> tuple[str, ...]:
    now = now or time.time()
    cards = f"{job.node_count}×{job.cards_per_node}" if job.cards_per_node else "—"
    nodes = ",".join(job.nodes) if job.nodes else (f"({job.node_count})" if job.node_count > 1 else "—")
    return (
        job.label,
        shown(job.name),
        shown(job.user),
        shown(job.state.lower()),
        shown(job.partition),
        shown(nodes),
        cards,
        duration(job.elapsed(now)),
        _left(job, now),
        shown(why(job, now)),
    )


def _left(job: QueueJob, now: float) -> str:
    if job.state != "RUNNING":
        return "—"
    return duration(job.time_left(now)) if job.time_limit_min is not None else "∞"


def queue_json(job: QueueJob, now: float | None = None) -> dict[str, object]:
    now = now or time.time()
    return {
        "job_id": job.job_id,
        "label": job.label,
        "name": job.name,
        "user": job.user,
        "state": job.state,
        "reason": job.reason,
        "words": state_words(job, now),
        "partition": job.partition,
        "nodes": list(job.nodes),
        "node_count": job.node_count,
        "cards_per_node": job.cards_per_node,
        "cards_by_node": {k: list(v) for k, v in job.cards_by_node.items()},
        "elapsed_s": job.elapsed(now),
        "time_limit_min": job.time_limit_min,
        "time_left_s": job.time_left(now),
        "restarts": job.restarts,
        "exit_status": job.exit_status,
        "exit_signal": job.exit_signal,
        "stdout": job.stdout_path(),
    }


def node_row(node: SlurmNode) -> tuple[str, ...]:
    return (
        shown(node.name),
        shown(node.state_words),
        shown(",".join(node.partitions)),
        str(node.cards_total),
        str(node.cards_used),
        str(node.cards_free),
        f"{node.cpus_used}/{node.cpus}",
        shown(node.reason),
    )


def node_json(node: SlurmNode) -> dict[str, object]:
    return {
        "name": node.name,
        "state": node.state,
        "flags": list(node.flags),
        "usable": node.usable,
        "reason": node.reason,
        "partitions": list(node.partitions),
        "gres": [f"{g.name}:{g.type}:{g.count}" if g.type else f"{g.name}:{g.count}" for g in node.gres],
        "cards_total": node.cards_total,
        "cards_used": node.cards_used,
        "cards_free": node.cards_free,
        "cpus": node.cpus,
        "cpus_used": node.cpus_used,
    }


def text_table(columns: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> str:
    table = [columns, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table)
