"""The session's real Slurm cluster (cluster.py); tests that use it skip, saying why, where Slurm's
daemons are not installed or the suite does not run as root (slurmd must be root to launch jobs)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.jobs.conftest import processes_of
from tests.required import require
from tests.slurm.cluster import SlurmTestCluster, missing_binaries, running_cluster


def _why_not() -> str | None:
    missing = missing_binaries()
    if missing:
        return (
            f"Slurm is not installed ({', '.join(missing)} missing): `make system` installs slurmctld, "
            "slurmd, slurm-client and munge with apt-get"
        )
    if os.geteuid() != 0:
        return "the test Slurm cluster needs root (slurmd launches jobs as their user)"
    return None


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmTestCluster]:
    why = _why_not()
    if why:
        require("slurm", why)
    with running_cluster() as cluster:
        yield cluster
        cluster.cancel_all()
    assert not cluster.swept, f"job processes or slurmstepd outlived the test cluster: {cluster.swept}"
    assert not cluster.leftovers()


@pytest.fixture
def slurm(slurm_cluster: SlurmTestCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[SlurmTestCluster]:
    """The cluster with this test's environment pointing at it (SLURM_CONF), every node idle; jobs
    a test left are cancelled and nodes resumed afterwards."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    slurm_cluster.wait_idle(
        timeout=60
    )  # every node back and idle: a node an earlier test killed may still be down
    yield slurm_cluster
    slurm_cluster.cancel_all()
    slurm_cluster.run("scontrol", "update", "nodename=ALL", "state=resume", check=False)


@pytest.fixture(autouse=True)
def nothing_outlives_the_test(gaudi_home: Path) -> Iterator[None]:
    """Supervisors and ranks a test started (they carry its GAUDI_TUI_HOME, which sbatch exports
    to the job) have ended when it ends: jobs end with their test (the `slurm` fixture cancels
    what is left first)."""
    yield
    deadline = time.monotonic() + 30
    while (left := processes_of(gaudi_home)) and time.monotonic() < deadline:
        time.sleep(0.3)
    described = [f"{p.pid} {' '.join(p.cmdline())[:100]}" for p in left]
    for proc in left:
        proc.kill()
    assert not described, "processes outlived the test:\n" + "\n".join(described)
