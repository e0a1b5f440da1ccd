"""The session fixtures that tests in more than one folder use, defined once (registered by
tests/conftest.py's `pytest_plugins`): a fixture imported into a test module is a second definition
there, and a session fixture then starts a second time (a second Slurm cluster, a second LoRA
training) while the first still runs."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.chat.conftest import TrainedRun, train_facts
from tests.required import require
from tests.slurm.cluster import SlurmTestCluster, missing_binaries, running_cluster


def _why_no_slurm() -> str | None:
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
    """The session's real Slurm cluster (tests/slurm/cluster.py); tests that use it skip, saying why,
    where Slurm's daemons are not installed or the suite does not run as root."""
    why = _why_no_slurm()
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


@pytest.fixture(scope="session")
def lora_run(tmp_path_factory: pytest.TempPathFactory) -> TrainedRun:
    """A LoRA job trained once per session on facts the demo model does not know (tests/chat/conftest.py)."""
    return train_facts(tmp_path_factory.mktemp("lora-home"), "lora")
