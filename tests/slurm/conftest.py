"""Slurm tests' guard: no process a test started outlives it. The session's real Slurm cluster
(`slurm_cluster`, `slurm`) is defined once for every folder in tests/session_fixtures.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.jobs.conftest import processes_of


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
