"""Command-job fixtures: the training-job helpers (waits, events, no stray process after a test)
and a folder holding the user's scripts and data, as a user would have them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.commands import scripts
from tests.jobs.conftest import no_stray_processes  # noqa: F401 - the autouse guard, here too


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    scripts.write(folder, "train.py", scripts.HF_TRAINER)
    scripts.write(folder, "loop.py", scripts.JSON_LOOP)
    scripts.write(folder, "crash.py", scripts.CRASHING)
    scripts.write(folder, "ranks.py", scripts.TORCHRUN_LOOP)
    scripts.write(folder, "acc.py", scripts.ACCELERATE_LOOP)
    scripts.train_file(folder)
    return folder
