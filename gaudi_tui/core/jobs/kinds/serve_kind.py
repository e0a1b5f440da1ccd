"""A model server as a job (`kind = "serve"`): `vllm serve` or `transformers serve` on the chosen
cards, under the command kind's life cycle. The serve settings become an argument list
(`core/jobs/kinds/serve_engines.py`) and the command machinery supervises it (`serve_supervise.py`): its own
session, every process recorded, `s` = SIGINT (the server finishes the requests in flight and exits),
then SIGTERM, then SIGKILL `kill_grace_s` apart; `k k` kills. Runs on this host (target local), or
as one task holding the cards of one Slurm node (`serve_cluster.py`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from gaudi_tui.core import paths
from gaudi_tui.core.jobs import targets
from gaudi_tui.core.jobs.kinds import OutputWatch, serve_cluster, serve_engines
from gaudi_tui.core.jobs.kinds.command_kind import CommandKind
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.validate import Problem
from gaudi_tui.core.serve import model, ready

LOCAL_OR_SLURM = "a model server runs on this host or on Slurm: choose target local or slurm"


class ServeKind(CommandKind):
    name = "serve"
    metrics_from_output = False
    one_task = True

    def prepare(self, spec: JobSpec) -> JobSpec:
        """The engine and port resolved (0: a free port now; on a cluster's node, chosen there), the
        engine's knobs under the spec's env."""
        from gaudi_tui.core.jobs.launch import free_port

        engine = serve_engines.choose(spec, {**os.environ, **spec.env})
        on_node = targets.for_spec(spec).starts_ranks
        spec = replace(
            spec, serve_engine=engine, serve_port=spec.serve_port or (0 if on_node else free_port())
        )
        return replace(spec, env=serve_engines.env(spec, recipe_cache(), spec.serve_model))

    def validate(
        self,
        spec: JobSpec,
        own: list[Problem],
        env: Mapping[str, str],
        device_name: str | None,
        here: bool,
        starts_ranks: bool = False,
    ) -> list[Problem]:
        if not here and not starts_ranks:
            return [
                *own,
                Problem("target", LOCAL_OR_SLURM),
            ]
        out = [*own, *serve_engines.problems(spec, env, here=here)]
        if starts_ranks:
            out += serve_cluster.problems(spec)
        try:
            model.resolve(spec.serve_model)
        except model.ServeRefused as exc:
            out.append(Problem("serve_model", str(exc)))
        if here and not any(p.field in ("serve_host", "serve_port") for p in out) and port_taken(spec):
            out.append(
                Problem(
                    "serve_port",
                    f"port {spec.serve_port} on {spec.serve_host} is in use (another server?): choose "
                    "another, or 0 for a free one",
                )
            )
        return out

    def supervise_here(self, attempt: Attempt) -> int:
        from gaudi_tui.core.jobs.kinds.serve_supervise import supervise

        return supervise(attempt)

    def rank_argv(self, run: RunFolder, spec: JobSpec, resume: Path | None) -> list[str]:
        return serve_cluster.rank_argv(run)

    def rank_env(self, run: RunFolder, spec: JobSpec, base: Mapping[str, str]) -> dict[str, str]:
        return serve_cluster.rank_env(run, spec, base)

    def rank_cwd(self, run: RunFolder, spec: JobSpec) -> Path:
        return run.path

    def output_follower(
        self, run: RunFolder, spec: JobSpec, resume: Path | None, attach: bool
    ) -> OutputWatch:
        return serve_cluster.SlurmServeWatch(run, spec)

    def newest_checkpoint(self, run: RunFolder, spec: JobSpec, target_says: Path | None) -> Path | None:
        return None  # a server starts again from its model

    def requeue_checkpoint(self, run: RunFolder, spec: JobSpec) -> Path | None:
        return None

    def resume_refusal(self, run: RunFolder, spec: JobSpec) -> str | None:
        return (
            f"a server has no checkpoint to go on from: start it again with `gaudi-tui train {run.spec_path}`"
        )

    def stops_by_file(self, run: RunFolder, spec: JobSpec) -> bool:
        return False

    def stop_words(self, run: RunFolder, spec: JobSpec) -> str:
        return (
            f"s drains and stops the server: SIGINT (it finishes the requests in flight), then SIGTERM after "
            f"{spec.kill_grace_s:g} s, then SIGKILL"
        )

    def finished_words(self, run: RunFolder) -> str:
        return ""

    def failure_words(self, run: RunFolder) -> str | None:
        from gaudi_tui.core.jobs.kinds.serve_supervise import failure

        return failure(run.log_path)

    def launcher_words(self, spec: JobSpec) -> str:
        return f"{spec.serve_engine} serve"

    def note(self, run: RunFolder) -> str:
        return ready.note(run.path)


def recipe_cache() -> Path:
    """Where vLLM keeps compiled HPU graph recipes between starts (PT_HPU_RECIPE_CACHE_CONFIG)."""
    return paths.data_dir() / "hpu-recipes"


def port_taken(spec: JobSpec) -> bool:
    """Something listens on the spec's port already (a bind there fails)."""
    import socket

    family = socket.AF_INET6 if ":" in spec.serve_host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind: only a listener counts
        try:
            sock.bind((spec.serve_host, spec.serve_port))
        except OSError:
            return True
    return False


KIND = ServeKind()
