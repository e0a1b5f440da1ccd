"""Before anything is queued: the spec against what the cluster has (sinfo, partitions) and Intel's
layout rules. A request Slurm would take but never run, or reject with "Requested node
configuration is not available" (after using up a job id), is refused here with the reason."""

from __future__ import annotations

from dataclasses import replace

import gaudi_tui.core.jobs.targets.slurm.script as script
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.validate import Problem
from gaudi_tui.core.slurm import model
from gaudi_tui.core.slurm.cli import Slurm, SlurmError

HOST_CARDS = 8
CARD_SETS = (1, 2, 4, 8)


def prepare(spec: JobSpec) -> JobSpec:
    """The spec as it runs on Slurm: device decided (a login node cannot probe the compute nodes:
    `auto` is hpu when cards are requested, else cpu), one process per card of every node."""
    device = spec.device
    if device == "auto":
        device = "hpu" if spec.slurm_gres != "none" else "cpu"
    processes = spec.slurm_nodes * spec.slurm_cards_per_node
    return replace(spec, device=device, processes=processes, cards=(), launcher="single")


def partitions(text: str) -> dict[str, dict[str, str]]:
    return {p["PartitionName"]: p for p in model.parse_show_lines(text) if "PartitionName" in p}


def check(spec: JobSpec, slurm: Slurm) -> tuple[JobSpec, list[Problem]]:
    prepared = prepare(spec)
    problems = [Problem(f, m) for f, m in field_problems(prepared)]
    if problems:
        return prepared, problems
    try:
        nodes = model.nodes_from_json(slurm.sinfo())
        parts = partitions(slurm.show_partitions())
    except SlurmError as exc:
        what = "no Slurm controller answers" if exc.unreachable else "Slurm refused to list its nodes"
        return prepared, [Problem("target", f"{what}: {exc}")]
    return prepared, [Problem(f, m) for f, m in cluster_problems(prepared, nodes, parts)]


def field_problems(spec: JobSpec) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if not 1 <= spec.slurm_nodes <= 4096:
        out.append(("slurm_nodes", f"{spec.slurm_nodes} is not between 1 and 4096"))
    per = spec.slurm_cards_per_node
    if spec.device == "hpu":
        if per not in CARD_SETS:
            out.append(("slurm_cards_per_node", f"{per} cards: within a host a job uses 1, 2, 4 or 8 cards (Intel's supported sets)"))  # fmt: skip
        elif spec.slurm_nodes > 1 and per != HOST_CARDS:
            out.append(("slurm_cards_per_node", f"{spec.slurm_nodes} nodes × {per} cards: a job across hosts uses whole hosts of {HOST_CARDS} cards"))  # fmt: skip
        if spec.slurm_gres == "none":
            out.append(("slurm_gres", "an hpu job needs its cards from Slurm: gres gpu or hpu, as the site names them"))  # fmt: skip
    elif not 1 <= per <= 256:
        out.append(("slurm_cards_per_node", f"{per} processes per node is not between 1 and 256"))
    if (problem := script.time_problem(spec.slurm_time_limit)) is not None:
        out.append(("slurm_time_limit", problem))
    for name in ("slurm_partition", "slurm_account", "slurm_qos", "slurm_gres_type"):
        if (problem := script.name_problem(name, getattr(spec, name))) is not None:
            out.append((name, problem))
    out += [("slurm_options", p) for p in script.option_problems(spec.slurm_options)]
    out += [("env", p) for p in script.env_problems(spec.env)]
    return out


def cluster_problems(
    spec: JobSpec, nodes: list[model.SlurmNode], parts: dict[str, dict[str, str]]
) -> list[tuple[str, str]]:
    """The partition and GRES exist, and enough nodes of the partition have the cards at all
    (free or not: busy cards make the job wait with a reason, missing ones make it never run)."""
    if spec.slurm_partition:
        name = spec.slurm_partition
        if name not in parts:
            return [("slurm_partition", f"no partition {name!r}; partitions: {', '.join(parts) or 'none'}")]
    else:
        default = [p for p, info in parts.items() if info.get("Default") == "YES"]
        if not default:
            return [
                ("slurm_partition", f"the cluster has no default partition: choose one of {', '.join(parts)}")
            ]
        name = default[0]
    info = parts[name]
    if info.get("State", "UP") not in ("UP",):
        return [("slurm_partition", f"partition {name} is {info.get('State', '').lower()}")]
    members = [n for n in nodes if name in n.partitions]
    if not members:
        return [("slurm_partition", f"partition {name} has no nodes")]
    if spec.slurm_gres == "none":
        fit = members
    else:
        named = [n for n in members if any(g.name == spec.slurm_gres for g in n.gres)]
        if not named:
            kinds = sorted({g.name for n in members for g in n.gres}) or ["none"]
            return [("slurm_gres", f"no node of partition {name} has GRES {spec.slurm_gres!r}; its nodes have: {', '.join(kinds)}")]  # fmt: skip
        if spec.slurm_gres_type:
            named = [n for n in named if any(g.name == spec.slurm_gres and g.type == spec.slurm_gres_type for g in n.gres)]  # fmt: skip
            if not named:
                kinds = sorted({f"{g.name}:{g.type}" for n in members for g in n.gres if g.type})
                return [("slurm_gres_type", f"no node of partition {name} has {spec.slurm_gres}:{spec.slurm_gres_type}; types there: {', '.join(kinds) or 'none'}")]  # fmt: skip
        fit = [n for n in named if _cards(n, spec) >= spec.slurm_cards_per_node]
    if len(fit) < spec.slurm_nodes:
        most = max((_cards(n, spec) for n in members), default=0)
        return [
            (
                "slurm_nodes" if fit else "slurm_cards_per_node",
                f"can never run: {spec.slurm_nodes} node(s) with {spec.slurm_cards_per_node} cards each asked, "
                f"partition {name} has {len(fit)} such node(s) (at most {most} cards on a node, {len(members)} nodes)",
            )
        ]
    max_nodes = info.get("MaxNodes", "UNLIMITED")
    if max_nodes.isdigit() and spec.slurm_nodes > int(max_nodes):
        return [("slurm_nodes", f"partition {name} allows at most {max_nodes} nodes per job")]
    return []


def _cards(node: model.SlurmNode, spec: JobSpec) -> int:
    return sum(
        g.count
        for g in node.gres
        if g.name == spec.slurm_gres and (not spec.slurm_gres_type or g.type == spec.slurm_gres_type)
    )
