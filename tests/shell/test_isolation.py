"""Tests never touch the user's things: whatever the environment exports, each test has its own
runs folder (GAUDI_TUI_RUNS_DIR outranks GAUDI_TUI_HOME, so it must be unset, or `make test` would
kill the user's real jobs in the teardowns that end a test's jobs)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gaudi_tui.core.jobs import runfolder
from tests.conftest import PYTHON, ROOT, USER_SETTINGS, child_env


def test_the_runs_folder_is_the_tests_own(gaudi_home: Path) -> None:
    assert runfolder.runs_dir().is_relative_to(gaudi_home)
    assert "GAUDI_TUI_RUNS_DIR" in USER_SETTINGS and "RAY_ADDRESS" in USER_SETTINGS


def test_an_exported_runs_folder_is_not_used_by_tests(tmp_path: Path) -> None:
    users = tmp_path / "users-runs"
    users.mkdir()
    env = child_env(GAUDI_TUI_RUNS_DIR=str(users), GAUDI_TUI_PROMETHEUS="http://127.0.0.1:9")
    test = "tests/shell/test_isolation.py::test_the_runs_folder_is_the_tests_own"
    done = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    assert list(users.iterdir()) == []
