"""Fixtures for the device tests: the fake hl-smi on PATH, the fake pyhlml/pynvml on sys.path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.conftest import FAKES, PYTHON, SAMPLES

FAKE_BIN = FAKES / "bin"
FAKE_MODULES = ("pyhlml", "pynvml", "hlsmi_replay")


class FakeHlSmi:
    """The fake `hl-smi` is first on PATH; `log` lists every start as `<pid> <args>`."""

    def __init__(self, log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.log = log
        self.monkeypatch = monkeypatch

    def set(self, **env: str) -> None:
        for name, value in env.items():
            self.monkeypatch.setenv(f"FAKE_HLSMI_{name.upper()}", value)

    def starts(self) -> list[tuple[int, str]]:
        if not self.log.exists():
            return []
        rows = [line.split(" ", 1) for line in self.log.read_text().splitlines() if line]
        return [(int(pid), args[0] if args else "") for pid, *args in rows]

    def loop_pids(self) -> list[int]:
        return [pid for pid, args in self.starts() if " -l " in f" {args} "]


def _clear_fake_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("FAKE_HLSMI_", "FAKE_PYHLML_", "FAKE_PYNVML_")):
            monkeypatch.delenv(name)


@pytest.fixture
def fake_hl_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHlSmi:
    _clear_fake_env(monkeypatch)
    log = tmp_path / "hl-smi.log"
    # The fake's `#!/usr/bin/env python3` finds this venv's python first (fast, no pyenv shim).
    path = os.pathsep.join([str(FAKE_BIN), str(Path(PYTHON).parent), os.environ.get("PATH", "")])
    monkeypatch.setenv("PATH", path)
    monkeypatch.setenv("FAKE_HLSMI_SAMPLES_DIR", str(SAMPLES))
    monkeypatch.setenv("FAKE_HLSMI_LOG", str(log))
    return FakeHlSmi(log, monkeypatch)


@pytest.fixture
def no_hl_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_fake_env(monkeypatch)
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(PYTHON).parent), "/usr/bin", "/bin"]))


@pytest.fixture
def fake_modules(monkeypatch: pytest.MonkeyPatch):
    """Make the fake `pyhlml` and `pynvml` importable in this process."""
    _clear_fake_env(monkeypatch)
    monkeypatch.setenv("FAKE_HLSMI_SAMPLES_DIR", str(SAMPLES))
    monkeypatch.syspath_prepend(str(FAKES))
    yield
    for name in FAKE_MODULES:
        sys.modules.pop(name, None)
