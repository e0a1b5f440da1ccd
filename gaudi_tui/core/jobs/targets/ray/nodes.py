"""The cluster's nodes and free resources, from the dashboard's REST API (`/api/v0/nodes`,
`/api/cluster_status`): the port an SSH tunnel forwards. Every request goes through the bounded
client (`core/untrusted/http.py`: a deadline over the whole exchange, a bounded body, a loopback
tunnel asked past `$http_proxy`, no redirect followed), every answer through the untrusted JSON
reader."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gaudi_tui.core.jobs.targets import TargetError, seconds_from_env
from gaudi_tui.core.untrusted import http
from gaudi_tui.core.untrusted.data import loads

TIMEOUT_ENV = "GAUDI_TUI_RAY_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 10.0
MAX_ANSWER = 32 << 20
"""The most a REST answer may hold: `/api/v0/nodes?detail=1` for 1,000 nodes is a few MB."""


def request_timeout() -> float:
    """The bound of every request to a Ray cluster (the REST API's whole answer; the Jobs API's
    connect and each read): 10 s, or $GAUDI_TUI_RAY_TIMEOUT_S."""
    return seconds_from_env(TIMEOUT_ENV, DEFAULT_TIMEOUT_S)


class ClusterError(TargetError):
    """The cluster cannot be reached or answered something unusable; the message says what to do."""


# --- the cluster: nodes and free resources -------------------------------------------------------


@dataclass(frozen=True)
class Node:
    node_id: str
    ip: str
    alive: bool
    head: bool
    hpu_total: float = 0.0
    hpu_free: float = 0.0
    cpu_total: float = 0.0
    cpu_free: float = 0.0
    memory_total: float = 0.0
    memory_free: float = 0.0
    message: str = ""
    accelerator: str = ""
    """Ray's accelerator type of the node's cards (GAUDI2 from `accelerator_type:Intel-GAUDI2`)."""

    @property
    def label(self) -> str:
        return f"{self.ip} ({self.node_id[:8]})"


def normalize_address(address: str) -> str:
    """A dashboard URL from what a user types: `host:8265` gains `http://`; no trailing slash."""
    text = address.strip().rstrip("/")
    if text and "://" not in text:
        text = "http://" + text
    return text


def get_json(address: str, path: str) -> Any:
    url = normalize_address(address) + path
    try:
        answer = http.get(url, timeout=request_timeout(), max_body=MAX_ANSWER)
        if answer.status == 200:
            return loads(answer.body, what="the dashboard's answer")
        reason = f"HTTP {answer.status} {answer.reason}"
    except http.HttpError as exc:
        reason = exc.reason
    except ValueError as exc:
        reason = str(exc)
    raise ClusterError(
        f"cannot reach the Ray cluster at {normalize_address(address)} ({reason}): is its head "
        "running with the dashboard (`ray start --head --dashboard-host 127.0.0.1`), and for a "
        "remote cluster is the dashboard port tunnelled (`ssh -L 8265:127.0.0.1:8265 HEAD`)?"
    )


def list_nodes(address: str) -> list[Node]:
    """Every node the cluster knows (dead ones too), with total and free HPUs, CPUs and memory."""
    listing = get_json(address, "/api/v0/nodes?detail=1&limit=1000")
    try:
        rows = listing["data"]["result"]["result"]
        status = get_json(address, "/api/cluster_status")
        usage = status["data"]["clusterStatus"]["loadMetricsReport"]["usageByNode"] or {}
    except (KeyError, TypeError) as exc:
        raise ClusterError(f"{address} answered, but not like a Ray dashboard ({exc})") from None
    nodes = []
    for row in rows if isinstance(rows, list) else ():
        try:
            nodes.append(_node(row, usage if isinstance(usage, dict) else {}))
        except (AttributeError, TypeError, ValueError, IndexError, KeyError):
            print(f"a node row of {address} is not like Ray's; left out", file=sys.stderr, flush=True)
    return sorted(nodes, key=lambda n: (not n.head, not n.alive, n.ip, n.node_id))


def _node(row: Mapping[str, Any], usage: Mapping[str, Any]) -> Node:
    """One row of `/api/v0/nodes` (raises for a row of another shape)."""
    node_id = str(row.get("node_id", ""))
    total = row.get("resources_total") or {}
    used = usage.get(node_id, {})

    def free(name: str, total: Mapping[str, float] = total, used: Mapping[str, Any] = used) -> float:
        pair = used.get(name)
        return float(pair[1] - pair[0]) if pair else float(total.get(name, 0.0))

    alive = row.get("state") == "ALIVE"
    return Node(
        node_id=node_id,
        ip=str(row.get("node_ip", "")),
        alive=alive,
        head=bool(row.get("is_head_node")),
        hpu_total=float(total.get("HPU", 0.0)),
        hpu_free=free("HPU") if alive else 0.0,
        cpu_total=float(total.get("CPU", 0.0)),
        cpu_free=free("CPU") if alive else 0.0,
        memory_total=float(total.get("memory", 0.0)),
        memory_free=free("memory") if alive else 0.0,
        message=str(row.get("state_message") or ""),
        accelerator=next(
            (k.split(":", 1)[1].removeprefix("Intel-") for k in total if k.startswith("accelerator_type:")),
            "",
        ),
    )


def format_nodes(nodes: list[Node]) -> str:
    """A small table: one line per node (HPU and CPU as free/total, memory in GiB)."""
    lines = [f"{'node':<26} {'state':<6} {'HPU':>9} {'CPU':>9} {'mem GiB':>13}"]
    for n in nodes:
        role = " head" if n.head else ""
        lines.append(
            f"{n.label + role:<26} {'alive' if n.alive else 'DEAD':<6} "
            f"{n.hpu_free:>4g}/{n.hpu_total:<4g} {n.cpu_free:>4g}/{n.cpu_total:<4g} "
            f"{n.memory_free / 2**30:>6.1f}/{n.memory_total / 2**30:<6.1f}"
            + (f"  {n.message}" if n.message and not n.alive else "")
        )
    return "\n".join(lines)


def nodes_or_none(address: str) -> list[Node]:
    """The nodes, or none when the cluster does not answer (said in the supervisor's log)."""
    try:
        return list_nodes(address)
    except ClusterError as exc:
        print(f"cannot list the cluster's nodes: {exc}", file=sys.stderr, flush=True)
        return []
