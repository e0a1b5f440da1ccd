"""The session's Ray cluster (see cluster.py); every test here skips when ray is not installed."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="ray is not installed: pip install 'gaudi-tui[cluster]'")

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
