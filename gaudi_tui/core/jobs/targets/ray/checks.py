"""Before a Ray job starts: the spec prepared for the cluster and checked against its nodes."""

from __future__ import annotations

import sys
from dataclasses import replace

from gaudi_tui.core.devices.cardsets import SUPPORTED_SETS
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.targets.ray.nodes import ClusterError, Node, list_nodes, normalize_address
from gaudi_tui.core.jobs.validate import Problem

HOST_CARDS = 8


def prepare(spec: JobSpec, nodes: list[Node] | None = None) -> JobSpec:
    """The spec as it will run on the cluster: address, device, storage and Python resolved."""
    address = normalize_address(spec.ray_address or spec_mod.default_ray_address())
    device = spec.device
    if device == "auto":
        device = "hpu" if any(n.alive and n.hpu_total > 0 for n in nodes or ()) else "cpu"
    return replace(
        spec,
        ray_address=address,
        device=device,
        storage_path=spec.storage_path or str(runfolder.runs_dir()),
        ray_python=spec.ray_python or sys.executable,
        processes=spec.workers,
        cards=(),
    )


def check(spec: JobSpec) -> tuple[JobSpec, list[Problem]]:
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
        return prepare(spec), [Problem("ray_address", str(exc))]
    prepared = prepare(spec, nodes)
    return prepared, layout_problems(prepared, nodes)


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
