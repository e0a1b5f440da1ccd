"""A real two-node Ray cluster on loopback for the tests (the `ray_cluster` fixture starts it once).

Each node is one `ray start` with its own `--temp-dir` and ports; every process a node starts
inherits a marker variable naming that node, so the fixture stops exactly the processes it
started (never `ray stop`, which ends every Ray on the machine) and a test can kill one node.
The head advertises fake HPUs with `--resources`; the second node gets its HPU count from Ray's
own detection, through the fake `habana_frameworks` (tests/fakes) on its PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from gaudi_tui.core import processes

ROOT = Path(__file__).resolve().parents[2]
FAKES = ROOT / "tests" / "fakes"
RAY = str(Path(sys.executable).with_name("ray"))
MARK = "GAUDI_TUI_TEST_RAY_NODE"
OBJECT_STORE = str(200 * 2**20)
STOP_GRACE_S = 2.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def node_processes(mark: str, session: int | None = None) -> list[psutil.Process]:
    """Live processes of one node: in the session its `ray start` opened, or carrying its marker.

    The marker is read raw and sits last in the environment: Ray's process titles overwrite the
    start of /proc/PID/environ (psutil's parser then gives up).
    """
    needle = f"\0{MARK}={mark}\0".encode()
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            ours = session is not None and os.getsid(proc.pid) == session
            if not ours:
                ours = needle in b"\0" + Path(f"/proc/{proc.pid}/environ").read_bytes() + b"\0"
            if ours and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (OSError, psutil.Error):
            continue
    return found


def stop_processes(procs: list[psutil.Process], grace: float = 10.0) -> None:
    processes.end_processes(procs, "ray node process", term_wait=grace, kill_wait=5)


@dataclass
class RayTestCluster:
    root: Path
    gcs_port: int
    dashboard_port: int
    marks: list[str] = field(default_factory=list)
    sessions: dict[str, int] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def start_node(self, name: str, *args: str, env: dict[str, str] | None = None) -> str:
        mark = f"{self.root.name}-{name}"
        temp = self.root / name
        node_env = {**os.environ, **(env or {})}
        # Fast failure detection so a killed node is declared dead in seconds, not a minute.
        node_env.update(RAY_health_check_period_ms="1000", RAY_health_check_failure_threshold="3")
        node_env[MARK] = mark
        # Every node's agent on a port of its own: Ray's default (52365) is the same for all, and
        # when a later node's agent took it first, the head's agent had no HTTP server and no job
        # could be submitted ("Agent info not found", seen in CI under load).
        argv = [
            RAY, "start", "--node-ip-address=127.0.0.1", f"--temp-dir={temp}", "--num-cpus=1",
            f"--object-store-memory={OBJECT_STORE}", "--disable-usage-stats",
            f"--dashboard-agent-listen-port={free_port()}", *args,
        ]  # fmt: skip
        self.marks.append(mark)
        # Its own session: every process the node starts stays in it (found again by `getsid`).
        starter = subprocess.Popen(
            argv,
            env=node_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.sessions[mark] = starter.pid
        out, _ = starter.communicate(timeout=120)
        if starter.returncode != 0:
            raise RuntimeError(f"ray start {name} failed:\n{out[-3000:]}")
        return mark

    def processes(self, mark: str) -> list[psutil.Process]:
        return node_processes(mark, self.sessions.get(mark))

    def kill_node(self, mark: str) -> None:
        stop_processes(self.processes(mark), grace=0.1)

    def stop(self) -> None:
        """Every node at once, with a short grace: nothing of the test cluster needs a clean exit (its
        folder is deleted next); with 10 s per node, the stop took about 14 s."""
        stop_processes([p for mark in reversed(self.marks) for p in self.processes(mark)], grace=STOP_GRACE_S)

    def nodes(self) -> list[dict]:
        from urllib.request import urlopen

        with urlopen(f"{self.address}/api/v0/nodes?detail=1", timeout=5) as reply:  # noqa: S310
            return json.loads(reply.read())["data"]["result"]["result"]

    def wait_nodes(self, count: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if sum(n["state"] == "ALIVE" for n in self.nodes()) >= count:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the test cluster did not reach {count} live nodes")
