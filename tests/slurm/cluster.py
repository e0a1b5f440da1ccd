"""A real Slurm 22.05 cluster on loopback for the tests (the `slurm_cluster` fixture starts it once).

One munged with its own key and socket, one slurmctld and `slurmd -N nX` per node, all on free
ports, every file under one temp folder (`root`). Each node has `Gres=gpu:gaudi2:8` backed by eight
char devices (`mknod c 1 3`, the same device as /dev/null): Slurm then allocates real card indices
and sets CUDA_VISIBLE_DEVICES / SLURM_JOB_GPUS, as on a site with gpu GRES. The daemons run in the
foreground in their own sessions; the fixture stops exactly those PIDs and then sweeps what Slurm
leaves behind by design (slurmstepd and job processes survive slurmd): a slurmstepd with a file
open under `root`, and any process whose environment names this cluster's slurm.conf.

Facts this follows (Debian 12's Slurm 22.05.8, verified on this kind of machine): munged needs
`--force` when a parent of its socket folder lacks o+x; a spool folder per node must exist;
`SlurmdParameters=config_overrides` lets a node claim more CPUs than the host has; daemons bind
0.0.0.0 whatever the address, so only free ports are used.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from gaudi_tui.core import processes

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "sinfo", "scontrol", "scancel")
START_TIMEOUT_S = 30.0
CARDS = 8


def missing_binaries() -> list[str]:
    return [name for name in DAEMONS if shutil.which(name) is None]


def free_ports(count: int) -> list[int]:
    """Ports free on every address now (Slurm binds 0.0.0.0); held together so they differ."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("", 0))
        return [int(s.getsockname()[1]) for s in socks]


@dataclass
class SlurmTestCluster:
    root: Path
    nodes: tuple[str, ...] = ("n1", "n2")
    gres_name: str = "gpu"
    ports: list[int] = field(default_factory=list)
    daemons: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    base_env: dict[str, str] = field(default_factory=lambda: _daemon_env(os.environ))
    """The environment the cluster was made in, without the panel's own variables: a daemon
    restarted by a test must not carry that test's GAUDI_TUI_HOME (its processes would count
    as the test's)."""
    swept: list[int] = field(default_factory=list)
    """PIDs the teardown had to end itself: job processes or slurmstepd that outlived the daemons."""

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """Environment for a Slurm client of this cluster (never set in this process's os.environ)."""
        return {**self.base_env, "SLURM_CONF": str(self.conf)}

    # --- files ---------------------------------------------------------------------------------

    def write_config(self) -> None:
        root = self.root
        for sub in ("etc", "run", "log", "state", "munge", "out"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        (root / "munge").chmod(0o700)
        ctld_port, *node_ports = self.ports
        lines = [
            "ClusterName=gtlab",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={root}/run/munge.socket",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={root}/state",
            f"SlurmdSpoolDir={root}/spool/%n",
            f"SlurmctldPidFile={root}/run/slurmctld.pid",
            f"SlurmdPidFile={root}/run/slurmd-%n.pid",
            f"SlurmctldLogFile={root}/log/slurmctld.log",
            f"SlurmdLogFile={root}/log/slurmd-%n.log",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={root}/log/jobcomp.txt",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=bf_interval=1",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            f"GresTypes={self.gres_name}",
            "SlurmdParameters=config_overrides",
            "ReturnToService=2",
            "SlurmctldTimeout=10",
            "SlurmdTimeout=10",
            "InactiveLimit=0",
            "MinJobAge=300",
            "KillWait=5",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "MailProg=/bin/true",
        ]
        gres = []
        for name, port in zip(self.nodes, node_ports, strict=True):
            lines.append(
                f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=8 "
                f"RealMemory=4000 Gres={self.gres_name}:gaudi2:{CARDS} State=UNKNOWN"
            )
            devices = root / "dev" / name
            devices.mkdir(parents=True, exist_ok=True)
            (root / "spool" / name).mkdir(parents=True, exist_ok=True)
            for index in range(CARDS):
                device = devices / f"accel{index}"
                if not device.exists():
                    os.mknod(device, 0o666 | 0o020000, os.makedev(1, 3))
            gres.append(
                f"NodeName={name} Name={self.gres_name} Type=gaudi2 File={devices}/accel[0-{CARDS - 1}]"
            )
        lines.append("PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n")
        (root / "etc" / "gres.conf").write_text("\n".join(gres) + "\n")
        key = root / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(128))
            key.chmod(0o600)

    # --- daemons -------------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.root / "log" / f"{name}.out").open("ab")
        with log:
            self.daemons[name] = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=self.env, start_new_session=True,
            )  # fmt: skip

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.ports:
            self.ports = free_ports(1 + len(self.nodes))
        self.write_config()
        r = self.root
        self._spawn(
            "munged",
            [
                "munged", "-F", "--force", f"--key-file={r}/munge/munge.key", f"--socket={r}/run/munge.socket",
                f"--pid-file={r}/run/munged.pid", f"--seed-file={r}/munge/munged.seed",
                f"--log-file={r}/log/munged.log",
            ],
        )  # fmt: skip
        self._wait(lambda: (r / "run" / "munge.socket").exists(), "munged to open its socket")
        self.start_controller()
        for node in self.nodes:
            self.start_node(node)
        self.wait_idle()

    def start_controller(self) -> None:
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])

    def start_node(self, node: str) -> None:
        self._spawn(f"slurmd-{node}", ["slurmd", "-D", "-N", node, "-f", str(self.conf)])

    def run(self, *argv: str, timeout: float = 20.0, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
        return done

    def node_states(self) -> dict[str, str]:
        done = self.run("sinfo", "-h", "-N", "-o", "%N %T", check=False, timeout=15)
        states = {}
        for line in done.stdout.splitlines():
            name, _, state = line.partition(" ")
            states[name] = state.strip()
        return states

    def wait_idle(self, timeout: float = START_TIMEOUT_S) -> None:
        self._wait(
            lambda: all(self.node_states().get(n) == "idle" for n in self.nodes),
            f"every node idle (last: {self.node_states()})",
            timeout,
        )

    def start_requeued_now(self, job_id: int, nodes: list[str], timeout: float = 60.0) -> None:
        """A requeued job may start again only `cred_expire` (120 s) later, time for its old steps to
        end on its `nodes`: once it is PENDING (no longer COMPLETING: a start time set before then is
        overwritten) and those nodes are idle again, it is told to start now."""

        def settled() -> bool:
            done = self.run("squeue", "-h", "-j", str(job_id), "-o", "%T", check=False, timeout=15)
            states = self.node_states()
            return done.stdout.strip() == "PENDING" and all(states.get(n) == "idle" for n in nodes)

        self._wait(settled, f"job {job_id} to be PENDING after its requeue, on idle nodes {nodes}", timeout)
        self.run("scontrol", "update", f"jobid={job_id}", "StartTime=now")

    def _wait(self, ready: object, what: str, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if callable(ready) and ready():
                return
            for name, proc in self.daemons.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited ({proc.returncode}): {self.log_tail(name)}")
            time.sleep(0.1)
        raise RuntimeError(f"the test cluster timed out waiting for {what}")

    def log_tail(self, name: str) -> str:
        for path in (self.root / "log" / f"{name}.log", self.root / "log" / f"{name}.out"):
            if path.exists():
                return path.read_text(errors="replace")[-2000:]
        return ""

    def sbatch(self, *args: str, script: str | None = None) -> int:
        """Submit with plain sbatch (`--parsable`); returns the job id."""
        argv = ["sbatch", "--parsable", f"--chdir={self.root / 'out'}", *args]
        if script is not None:
            argv.append(script)
        return int(self.run(*argv).stdout.strip().split(";")[0])

    def kill_daemon(self, name: str, sig: signal.Signals = signal.SIGKILL) -> None:
        proc = self.daemons.pop(name)
        proc.send_signal(sig)
        proc.wait(timeout=30)

    # --- teardown ------------------------------------------------------------------------------

    def cancel_all(self) -> None:
        self.run("scancel", "--user", "root", check=False, timeout=15)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            left = self.run("squeue", "-h", "-t", "PD,R,CG,S", "-o", "%i", check=False, timeout=15)
            if left.returncode == 0 and not left.stdout.strip():
                return
            time.sleep(0.3)

    def stop(self) -> None:
        """SIGTERM every daemon we started (nodes first), SIGKILL after 15 s; then sweep leftovers."""
        order = sorted(self.daemons, key=lambda n: (n == "munged", n == "slurmctld"))
        groups = [[n for n in order if n.startswith("slurmd")], ["slurmctld"], ["munged"]]
        for group in groups:
            procs = [self.daemons.pop(n) for n in group if n in self.daemons]
            for proc in procs:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        self.swept = self.sweep()

    def leftovers(self) -> list[psutil.Process]:
        """slurmstepd with a file open under root, and processes whose environment names our conf."""
        marker = f"SLURM_CONF={self.conf}\0".encode()
        root = str(self.root)
        found = []
        for proc in psutil.process_iter(["pid", "name"]):
            if proc.pid == os.getpid():
                continue
            try:
                if proc.info["name"] == "slurmstepd":
                    if any(f.path.startswith(root) for f in proc.open_files()):
                        found.append(proc)
                    continue
                environ = Path(f"/proc/{proc.pid}/environ").read_bytes()
                if marker in environ and b"SLURM_JOB_ID=" in environ:
                    found.append(proc)
            except (OSError, psutil.Error):
                continue
        return [p for p in found if _alive(p)]

    def sweep(self) -> list[int]:
        """End the leftovers, children first; returns their PIDs (the suite asserts there were none
        after a clean teardown, except what a killed node left behind)."""
        left = self.leftovers()
        tree: list[psutil.Process] = []
        for proc in left:
            with contextlib.suppress(psutil.Error):
                tree.extend(proc.children(recursive=True))
        processes.end_processes([*tree, *left], "slurm test leftover", term_wait=None, kill_wait=5)
        return [p.pid for p in left]


def _daemon_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not k.startswith("GAUDI_TUI_")}


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@contextlib.contextmanager
def running_cluster(
    nodes: tuple[str, ...] = ("n1", "n2"), gres_name: str = "gpu"
) -> Iterator[SlurmTestCluster]:
    root = Path(tempfile.mkdtemp(prefix="gtslurm-", dir="/tmp"))
    root.chmod(0o755)
    cluster = SlurmTestCluster(root, nodes, gres_name)
    try:
        cluster.start()
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            cluster.cancel_all()
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
