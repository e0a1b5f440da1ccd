"""Slurm target: one batch script per attempt, submitted with sbatch, one srun task per card.

- `checks.py`: before anything is queued, the spec against sinfo and the partitions (no
  controller, an unknown partition or GRES, a request that can never fit, Intel's card sets);
- `script.py`: the batch script (kept as `slurm/attempt-N.sbatch` in the run folder);
- `submitting.py`: in the supervisor, sbatch, and the look by name when it gave no definite answer;
- `supervise.py`: in the supervisor, follow the job through the shared queue poll, tail
  its output file into stdout.log, stop and kill as 22.05's signals allow;
- `record.py`: `slurm.json`, the job id a new supervisor re-attaches by;
- `worker/slurm_rank.py` (on the nodes): each rank's environment and cards.

A shared filesystem between this host and the nodes is assumed, as Slurm sites have: the run
folder is where the ranks read the spec and the STOP file and write metrics and checkpoints.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus
from gaudi_tui.core.jobs.targets import Attempt, Host, Presence, TargetError
from gaudi_tui.core.jobs.targets.slurm import checks, script, states, submitting, supervise
from gaudi_tui.core.jobs.targets.slurm import record as record_mod
from gaudi_tui.core.jobs.validate import Problem
from gaudi_tui.core.slurm import model, poll, reasons
from gaudi_tui.core.slurm.cli import Slurm, SlurmError, conf_key

KILL_END_WAIT_S = 60.0
"""`k` without a supervisor: how long to wait for Slurm to report the job ended after scancel."""


class SlurmTarget:
    name = "slurm"
    runs_here = False
    starts_ranks = True
    remote_files = False

    def check(self, spec: JobSpec, host: Host) -> tuple[JobSpec, list[Problem]]:
        with_fixes = replace(
            spec, env={**host.env_fixes, **spec.env}
        )  # the Checklist's fixes, the spec's own last
        prepared, problems = checks.check(with_fixes, Slurm(env=host.env))
        return prepared, [*problems, *env_problems(spec.env)]

    def label(self, spec: JobSpec) -> str:
        return f"slurm:{spec.device}"

    def summary(self, spec: JobSpec) -> str:
        gres = "no GRES" if spec.slurm_gres == "none" else f"GRES {spec.slurm_gres}"
        where = f"partition {spec.slurm_partition}" if spec.slurm_partition else "the default partition"
        return (
            f"{spec.device} on Slurm: {spec.slurm_nodes} node(s) × {spec.slurm_cards_per_node} "
            f"{'card(s)' if spec.device == 'hpu' else 'rank(s)'} ({gres}), {where}"
        )

    def supervise(self, attempt: Attempt) -> int:
        return supervise.supervise(attempt)

    def request_stop(self, run: RunFolder) -> None:
        """The STOP file: rank 0 reads it and every rank stops at the same step with a checkpoint
        (a pending job is cancelled by its supervisor, which sees the file too)."""
        run.request_stop()

    def presence(self, run: RunFolder, status: JobStatus) -> Presence:
        record = record_mod.read(run)
        if record is None:
            return Presence("ended", "never submitted to Slurm")
        if (other := _other_cluster(record)) is not None:
            return Presence("unknown", other)
        slurm = Slurm()
        snap = poll.shared(slurm).get()
        if snap.error:
            return Presence("unknown", snap.error)
        job_id = record.job_id
        if job_id is None:
            found = [j for j in submitting.attempt_jobs(snap.jobs, record.job_name) if j.active]
            if not found:
                return Presence("ended", f"no Slurm job {record.job_name} was submitted")
            job_id = found[0].job_id
            record_mod.write(run, replace(record, job_id=job_id))
        mine = record.attempt == status.attempt  # a new supervisor records this attempt's end
        job = snap.job(job_id)
        if job is not None:
            if job.active:
                return Presence("running", f"Slurm job {job.job_id}: {reasons.state_words(job)}", attach=True)
            return Presence("ended", f"Slurm job {job.job_id} ended {job.state}", attach=mine)
        try:
            line = slurm.show_job(job_id)
            shown = model.shown_job(line) if line else None
            acct = states.accounting_state(slurm, job_id) if shown is None else None
        except SlurmError as exc:
            return Presence("unknown", str(exc))
        if shown is not None and shown.state not in model.ENDED:
            return Presence("running", f"Slurm job {job_id} is {shown.state}", attach=True)
        if acct is not None and acct not in model.ENDED:
            return Presence("unknown", states.stale_words(job_id, waiting=False))
        return Presence(
            "ended", f"Slurm job {job_id} ended" + (f" {shown.state}" if shown else ""), attach=mine
        )

    def kill(self, run: RunFolder, status: JobStatus, cancel: threading.Event | None) -> str:
        """TERM to the ranks, the spec's grace, then scancel; waits (bounded) until Slurm says the
        job ended. A job whose ranks a signal cannot reach (pending, configuring, requeued,
        suspended) is cancelled at once; one the controller no longer knows has nothing to cancel."""
        record = record_mod.read(run)
        if record is None or record.job_id is None:
            return "nothing was submitted to Slurm"
        if (other := _other_cluster(record)) is not None:
            raise TargetError(other)
        slurm = Slurm()
        job_id = record.job_id
        try:
            state = _state(slurm, job_id)
            if state == "GONE":
                return (
                    f"ended: Slurm's controller no longer knows job {job_id}, so nothing was left to cancel"
                )
            if state in states.SIGNALLED:
                slurm.scancel(job_id, "TERM")
                _wait_end(slurm, job_id, run.spec().kill_grace_s, cancel)
            if _state(slurm, job_id) not in {*model.ENDED, "GONE"}:
                slurm.scancel(job_id)
            final = _wait_end(slurm, job_id, KILL_END_WAIT_S, cancel)
        except SlurmError as exc:
            raise TargetError(f"could not cancel Slurm job {job_id}: {exc}") from None
        if final not in model.ENDED:
            raise TargetError(f"Slurm job {job_id} is still {final} {KILL_END_WAIT_S:.0f} s after scancel")
        return f"killed (Slurm job {job_id} {final})"

    def newest_checkpoint(self, run: RunFolder) -> Path | None:
        return run.newest_complete_checkpoint()

    def where(self, run: RunFolder) -> str:
        record = record_mod.read(run)
        if record is None or record.job_id is None:
            return "Slurm: not submitted yet"
        nodes = f" on {','.join(record.nodes)}" if record.nodes and record.state == "RUNNING" else ""
        words = record.words if record.state == "PENDING" else record.state.lower()
        return f"Slurm job {record.job_id}{nodes}: {words}"

    def details(self, run: RunFolder) -> str:
        record = record_mod.read(run)
        if record is None:
            return "not submitted to Slurm"
        lines = [self.where(run), f"batch script: {record.script}"]
        if record.restarts:
            lines.append(f"requeued by Slurm {record.restarts} time(s)")
        for rank in sorted(record.ranks, key=int):
            info = record.ranks[rank]
            cards = ",".join(str(c) for c in info.get("cards", [])) or "—"
            modules = info.get("habana_visible_modules") or "unset"
            lines.append(
                f"rank {rank}: node {info.get('node', '?')} cards {cards} modules {modules} ({info.get('modules_from', '')})"
            )
        if master := record.ranks.get("0", {}).get("master"):
            lines.append(f"rendezvous (MASTER_ADDR:MASTER_PORT, from the job id): {master}")
        return "\n".join(lines)


def env_problems(env: Mapping[str, str]) -> list[Problem]:
    """The spec's environment must not choose the cluster: it is sbatch's environment, while
    following the job and scancel use the panel's, so the job would run on one cluster and a kill
    cancel a job with the same id on another (sbatch's and srun's own variables: `script.env_problems`)."""
    return [
        Problem(
            "env",
            f"{name} in the job's env would send the job to another cluster than the one the panel "
            f"follows and cancels it on: set {name} in the panel's environment instead (start "
            f"gaudi-tui with {name}=…), where every Slurm call uses it",
        )
        for name in sorted(env)
        if name in script.CLUSTER_ENV
    ]


def _other_cluster(record: record_mod.SlurmRecord) -> str | None:
    """Why this panel cannot speak for the job: it was submitted to another cluster (SLURM_CONF)."""
    here = conf_key()
    if record.conf and record.conf != here:
        return (
            f"Slurm job {record.job_id} was submitted to the cluster of SLURM_CONF={record.conf}, and this "
            f"panel reaches {here}: start it with SLURM_CONF={record.conf} to follow or end the job"
        )
    return None


def _state(slurm: Slurm, job_id: int) -> str | None:
    job = poll.take(slurm).job(job_id)
    if job is not None:
        return job.state
    line = slurm.show_job(job_id)
    shown = model.shown_job(line) if line else None
    return shown.state if shown else "GONE"


def _wait_end(slurm: Slurm, job_id: int, limit: float, cancel: threading.Event | None) -> str | None:
    deadline = time.monotonic() + limit
    state = _state(slurm, job_id)
    while state not in model.ENDED and state != "GONE" and time.monotonic() < deadline:
        if cancel is not None and cancel.is_set():
            break
        time.sleep(0.5)
        state = _state(slurm, job_id)
    return "CANCELLED" if state == "GONE" else state


TARGET = SlurmTarget()
