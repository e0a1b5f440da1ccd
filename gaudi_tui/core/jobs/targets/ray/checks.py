"""Before a Ray job starts: the spec prepared for the cluster and checked against its nodes."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.devices.cardsets import SUPPORTED_SETS
from gaudi_tui.core.jobs import kinds, runfolder
from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.targets.ray.nodes import ClusterError, Node, list_nodes, normalize_address
from gaudi_tui.core.jobs.validate import Problem, generation_rules

HOST_CARDS = 8


def prepare(
    spec: JobSpec, nodes: list[Node] | None = None, env_fixes: Mapping[str, str] | None = None
) -> JobSpec:
    """The spec as it will run on the cluster: address, device, storage and Python resolved; the
    job's environment as a local job's (Gaudi's own settings, then the Checklist's fixes, then the
    spec's, last wins)."""
    address = normalize_address(spec.ray_address or spec_mod.default_ray_address())
    device = spec.device
    if device == "auto":
        device = "hpu" if any(n.alive and n.hpu_total > 0 for n in nodes or ()) else "cpu"
    env = (
        Accelerator("hpu", "the Ray cluster").child_env((), compile=spec.torch_compile)
        if device == "hpu"
        else {}
    )
    env.update(env_fixes or {})
    env.update(spec.env)
    return replace(
        spec,
        ray_address=address,
        device=device,
        storage_path=spec.storage_path or str(runfolder.runs_dir()),
        ray_python=spec.ray_python or sys.executable,
        processes=spec.workers,
        cards=(),
        env=env,
    )


def secrets_problems(spec: JobSpec) -> list[Problem]:
    """Ray shows a job's runtime_env (its environment) on the dashboard: secrets are refused."""
    names = sorted(k for k in spec.env if spec_mod.is_secret(k))
    if not names:
        return []
    return [
        Problem(
            "env",
            f"{', '.join(names)} look like secrets, and Ray shows a job's environment on its dashboard "
            "to anyone who reaches it, so they are not sent: set them on the cluster's nodes (in the "
            "environment `ray start` runs with) or in a file the job reads",
        )
    ]


def generation(nodes: list[Node]) -> str | None:
    """The Gaudi generation the cluster's live HPU nodes report (Ray's accelerator_type), if one."""
    kinds = {n.accelerator for n in nodes if n.alive and n.hpu_total > 0 and n.accelerator}
    return next(iter(kinds)) if len(kinds) == 1 else None


def check(spec: JobSpec, env_fixes: Mapping[str, str] | None = None) -> tuple[JobSpec, list[Problem]]:
    """Prepare the spec against the live cluster and list every reason it cannot run there."""
    if not (spec.ray_address or spec_mod.default_ray_address()):
        return spec, [
            Problem(
                "ray_address",
                "no cluster given: set ray_address to the Ray dashboard URL (e.g. "
                "http://127.0.0.1:8265) or export RAY_ADDRESS",
            )
        ]
    try:
        nodes = list_nodes(spec.ray_address or spec_mod.default_ray_address())
    except ClusterError as exc:
        prepared = prepare(spec, env_fixes=env_fixes)
        return prepared, [Problem("ray_address", str(exc)), *secrets_problems(prepared)]
    prepared = prepare(spec, nodes, env_fixes)
    own = [*layout_problems(prepared, nodes), *secrets_problems(prepared)]
    return prepared, own + generation_rules(prepared, generation(nodes))


def layout_problems(spec: JobSpec, nodes: list[Node]) -> list[Problem]:
    """Worker layout against the cluster's free resources and Intel's card rules."""
    out: list[Problem] = []
    alive = [n for n in nodes if n.alive]
    if not 1 <= spec.workers <= 512:
        return [Problem("workers", f"{spec.workers} is not between 1 and 512")]
    if spec.max_failures < 0:
        out.append(Problem("max_failures", f"{spec.max_failures} is negative; 0 means no automatic restart"))
    if spec.device not in ("hpu", "cpu"):
        return [*out, Problem("device", f"Ray jobs run on hpu or cpu, not {spec.device}")]
    entry = kinds.for_spec(spec).cluster_entry(spec)
    if entry.cpus or entry.hpus:
        return out + _one_node(spec, entry.cpus, entry.hpus, alive)
    if spec.device == "cpu":
        free = sum(n.cpu_free for n in alive)
        if free < spec.workers:
            out.append(
                Problem(
                    "workers", f"{spec.workers} workers need {spec.workers} free CPUs; {_free(alive, 'cpu')}"
                )
            )
        return out
    return out + _hpu_layout(spec, alive)


def _one_node(spec: JobSpec, cpus: int, hpus: int, alive: list[Node]) -> list[Problem]:
    """An entry process that starts every rank on its own node: all it asks for on one node."""
    if cpus:
        if not any(n.cpu_free >= cpus for n in alive):
            return [
                Problem(
                    "workers",
                    f"{cpus} processes on one node need {cpus} free CPUs there; {_free(alive, 'cpu')}",
                )
            ]
        return []
    if not any(n.hpu_total > 0 for n in alive):
        return [Problem("device", "the cluster has no HPUs (Ray counts them only through habana_frameworks)")]
    if hpus > HOST_CARDS or hpus not in {len(s) for s in SUPPORTED_SETS} | {1}:
        return [
            Problem(
                "workers",
                f"{hpus} cards: your command runs on one node, on 1, 2, 4 or 8 cards (Intel's supported sets)",
            )
        ]
    if not any(n.hpu_free >= hpus for n in alive):
        return [Problem("workers", f"{hpus} HPUs on one node needed; {_free(alive, 'hpu')}")]
    return []


def _hpu_layout(spec: JobSpec, alive: list[Node]) -> list[Problem]:
    per, total = spec.hpus_per_worker, spec.workers * spec.hpus_per_worker
    sizes = sorted({len(s) for s in SUPPORTED_SETS} | {1})
    if not any(n.hpu_total > 0 for n in alive):
        return [
            Problem(
                "device",
                "the cluster has no HPUs (Ray counts them only through habana_frameworks): use device=cpu or auto",
            )
        ]
    if per not in sizes:
        return [
            Problem("hpus_per_worker", f"{per} cards per worker: use one of {', '.join(map(str, sizes))}")
        ]
    if total <= HOST_CARDS:
        if total not in sizes:
            return [
                Problem(
                    "workers",
                    f"{spec.workers} workers × {per} cards = {total} cards: within one host a job uses "
                    f"1, 2, 4 or 8 cards (Intel's supported sets)",
                )
            ]
        if not any(n.hpu_free >= total for n in alive):
            return [Problem("workers", f"{total} HPUs on one host needed; {_free(alive, 'hpu')}")]
        return []
    if total % HOST_CARDS or HOST_CARDS % per:
        return [
            Problem(
                "workers",
                f"{spec.workers} workers × {per} cards = {total} cards: a multi-host job uses whole hosts "
                f"of {HOST_CARDS} cards (16, 24, 32 … cards)",
            )
        ]
    hosts = total // HOST_CARDS
    whole = [n for n in alive if n.hpu_total == HOST_CARDS and n.hpu_free >= HOST_CARDS]
    if len(whole) < hosts:
        return [
            Problem(
                "workers",
                f"{total} HPUs need {hosts} whole hosts with all {HOST_CARDS} cards free, "
                f"found {len(whole)}; {_free(alive, 'hpu')}",
            )
        ]
    return []


def _free(nodes: list[Node], kind: str) -> str:
    if not nodes:
        return "the cluster has no live node"
    parts = [f"{n.label} {getattr(n, kind + '_free'):g}/{getattr(n, kind + '_total'):g}" for n in nodes]
    return f"free {kind.upper()}s per node: " + ", ".join(parts)
