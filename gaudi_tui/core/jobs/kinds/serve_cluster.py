"""A serve job on a target that starts the ranks itself (Slurm): one task on one node holding every
card of the job (`Kind.one_task`), the server started there by `worker/slurm_serve.py`, which
chooses the address and port on the node and writes them to `serve-node.json`
(`core/serve/node.py`); the supervisor on the login host tails the job's output into stdout.log,
and `SlurmServeWatch` follows it for the warm-up and probes the node's address for readiness."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from gaudi_tui.core.jobs.kinds import command, serve_supervise
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.targets.slurm import record as slurm_record
from gaudi_tui.core.jobs.validate import Problem
from gaudi_tui.core.serve import node, ready

NODE_MODULE = "gaudi_tui.core.jobs.worker.slurm_serve"


def problems(spec: JobSpec) -> list[Problem]:
    """What a server on the cluster cannot be: across nodes, or `transformers serve` on several cards."""
    out: list[Problem] = []
    if spec.slurm_nodes > 1:
        out.append(
            Problem(
                "slurm_nodes",
                f"a model server runs on one node ({spec.slurm_nodes} asked): set slurm_nodes=1, with "
                "tensor parallel over that node's cards (slurm_cards_per_node)",
            )
        )
    if spec.serve_engine == "transformers" and spec.slurm_cards_per_node > 1:
        out.append(
            Problem(
                "slurm_cards_per_node",
                f"transformers serve runs on one card ({spec.slurm_cards_per_node} asked): set "
                "slurm_cards_per_node=1, or serve_engine=vllm for tensor parallel on several",
            )
        )
    return out


def rank_argv(run: RunFolder, python: str | None = None) -> list[str]:
    return [python or sys.executable, "-m", NODE_MODULE, "--run", str(run.path)]


class SlurmServeWatch:
    """The readiness watch of a server on a node, as the Slurm supervisor's output follower."""

    def __init__(self, run: RunFolder, spec: JobSpec) -> None:
        status = run.status()
        attempt = status.attempt if status is not None else 0
        first = serve_supervise.info(spec, "", spec.serve_model)
        self.watch = ready.ReadyWatch(
            run.path,
            run.log_path,
            first,
            serve_supervise.api_key(spec),
            locate=lambda: located(run, attempt),
        )

    def start(self) -> None:
        self.watch.start()

    def skip_recorded(self, metrics_base: int) -> None:
        """A server writes no metrics: nothing to skip."""

    def close(self, stopped: bool) -> None:
        self.watch.close()


def located(run: RunFolder, attempt: int) -> dict[str, str] | None:
    """Where the node says the attempt's server is, and how often Slurm requeued the job (as the
    supervisor saw it): a requeue is a new start whose node may not have written its address yet,
    so the readiness watch takes the server for not ready from then until one answers again."""
    found = node.read(run.path, attempt)
    if found is None:
        return None
    record = slurm_record.read(run)
    return {**found, "restarts": str(record.restarts if record is not None else 0)}


def rank_env(run: RunFolder, spec: JobSpec, base: Mapping[str, str]) -> dict[str, str]:
    """The command kind's environment (the cards, the spec's env), without the Trainer wrapper."""
    return command.job_env(run, replace(spec, wrap_trainer=False), base)


def rank_cwd(run: RunFolder) -> Path:
    return run.path
