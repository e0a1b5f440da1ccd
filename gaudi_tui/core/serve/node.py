"""Where a served job's server listens when it runs on a cluster's node (Slurm), and how the panel
learns it.

The node decides: the address it binds is the node's own (Slurm's `NodeAddr` for `SLURMD_NODENAME`,
asked with `scontrol show node -o`; the node's host name where scontrol does not answer) when the
spec's `serve_host` is a loopback one (the default 127.0.0.1: loopback on a node is unreachable from
the login host, so it is never what is meant), every network with 0.0.0.0 (clients use the node's
address), else the host as given. Port 0 is a port free on the node when the server starts. The
node writes `<run>/serve-node.json` = {"attempt", "node", "host", "port", "url", "model" (the id
the server answers to), "started" (when it wrote it)} each time a server starts there (the run folder
is shared, as Slurm sites share the filesystem); the panel's readiness watch takes the url of the
current attempt from it and probes it from the login host, and again when it changes (a Slurm
requeue of the same attempt: another node or port, or a new start at the same address).
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from gaudi_tui.core.serve.address import host_problem
from gaudi_tui.core.untrusted.files import load_json, write_atomic

NODE_FILE = "serve-node.json"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
EVERY_NETWORK = ("0.0.0.0", "::")
SCONTROL_S = 10.0


def node_address(env: Mapping[str, str]) -> str:
    """The node's address as Slurm knows it (NodeAddr, when it is an address or a host name), else
    its host name."""
    name = env.get("SLURMD_NODENAME", "")
    if name:
        try:
            out = subprocess.run(
                ["scontrol", "show", "node", "-o", name],
                capture_output=True, text=True, timeout=SCONTROL_S, check=True, env=dict(env),
            ).stdout  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            out = ""
        for word in out.split():
            address = word.split("=", 1)[1] if word.startswith("NodeAddr=") else ""
            if address and host_problem(address) is None:  # the cluster's word is checked
                return address
    return socket.gethostname()


def bind_and_reach(serve_host: str, env: Mapping[str, str]) -> tuple[str, str]:
    """The address the server binds on the node, and the one clients reach it on."""
    if serve_host in LOOPBACK:
        address = node_address(env)
        return address, address
    if serve_host in EVERY_NETWORK:
        return serve_host, node_address(env)
    return serve_host, serve_host


def free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def write(run_path: Path, attempt: int, node: str, host: str, port: int, reach: str, model: str) -> None:
    info = {
        "attempt": attempt, "node": node, "host": host, "port": port, "url": url(reach, port), "model": model,
        "started": time.time(),
    }  # fmt: skip
    write_atomic(run_path / NODE_FILE, json.dumps(info, indent=1) + "\n")


def read(run_path: Path, attempt: int) -> dict[str, str] | None:
    """The url and model the node wrote for `attempt` (an older attempt's file is not this server's),
    and when that server started ("" from a file of before "started"): a requeue changes it."""
    try:
        data = load_json(run_path / NODE_FILE)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("attempt") != attempt:
        return None
    where, model, started = data.get("url"), data.get("model"), data.get("started")
    if not (isinstance(where, str) and where and isinstance(model, str) and model):
        return None
    return {
        "url": where,
        "model": model,
        "started": repr(started) if isinstance(started, (int, float)) else "",
    }
