"""The session's Ray cluster (see cluster.py); every test here skips when ray is not installed."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests import required

required.module("ray", "ray", "ray is not installed: pip install 'gaudi-tui[cluster]'")

from gaudi_tui.core.jobs import control, runfolder  # noqa: E402
from tests.jobs.conftest import processes_of  # noqa: E402
from tests.ray.cluster import FAKES, ROOT, RayTestCluster, free_port  # noqa: E402


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayTestCluster]:
    root = Path(tempfile.mkdtemp(prefix="gtray-", dir="/tmp"))  # short: Ray's socket paths are limited
    cluster = RayTestCluster(root, free_port(), free_port())
    try:
        cluster.start_node(
            "head",
            "--head",
            f"--port={cluster.gcs_port}",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={cluster.dashboard_port}",
            "--include-dashboard=true",
            f"--ray-client-server-port={free_port()}",
            '--resources={"HPU": 2}',
        )
        cluster.start_node(
            "worker",
            f"--address=127.0.0.1:{cluster.gcs_port}",
            env={"PYTHONPATH": os.pathsep.join([str(FAKES), str(ROOT)]), "FAKE_HPU_CARDS": "2"},
        )
        cluster.wait_nodes(2)
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    strays = [p.pid for mark in cluster.marks for p in cluster.processes(mark)]
    assert not strays, f"Ray processes of the test cluster outlived it: {strays}"


@pytest.fixture(autouse=True)
def supervisors_end(gaudi_home: Path) -> Iterator[None]:
    """Every supervisor a test started has ended when the test ends (they end with their job);
    a job a failed test left running is killed on the cluster first, so the next test has it free."""
    yield
    deadline = time.monotonic() + 20
    while (left := processes_of(gaudi_home)) and time.monotonic() < deadline:
        time.sleep(0.3)
    described = [f"{p.pid} {' '.join(p.cmdline())[:100]}" for p in left]
    if left:
        for run in runfolder.all_runs():
            assert run.path.is_relative_to(gaudi_home), run.path  # only what this test made
            try:
                control.kill(run)
            except control.JobControlError:
                continue
        psutil.wait_procs(left, timeout=60)
    for proc in left:
        try:
            proc.kill()
        except psutil.Error:
            pass
    assert not described, "processes outlived the test:\n" + "\n".join(described)
