"""tests/required.py and scripts/install-system.sh: a missing component skips outside CI, fails
the run under CI (or GAUDI_TUI_REQUIRE), naming it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests import required
from tests.conftest import ROOT


@pytest.fixture
def bare_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH with a shell and nothing the tests install (no prometheus, tmux, Slurm, apt-get)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("bash", "id", "timeout"):
        found = shutil.which(tool)
        assert found is not None
        (folder / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GAUDI_TUI_REQUIRE", raising=False)
    return folder


def test_a_missing_component_skips_here_and_fails_under_ci(
    bare_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(pytest.skip.Exception, match=r"^prometheus: prometheus, promtool not on PATH"):
        required.tools("prometheus", "prometheus", "promtool")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"^required component missing: prometheus: prometheus"):
        required.tools("prometheus", "prometheus", "promtool")
    with pytest.raises(pytest.fail.Exception, match="required component missing: ray: no ray here"):
        required.module("no_such_module_here", "ray", "no ray here")
    monkeypatch.setenv("CI", "false")
    monkeypatch.setenv("GAUDI_TUI_REQUIRE", "tmux, slurm")
    with pytest.raises(pytest.fail.Exception, match="required component missing: tmux"):
        required.tools("tmux", "tmux")
    with pytest.raises(pytest.skip.Exception, match="^freezer: none here"):
        required.require("freezer", "none here")
    monkeypatch.setenv("GAUDI_TUI_REQUIRE", "all")
    with pytest.raises(pytest.fail.Exception, match="required component missing: freezer"):
        required.require("freezer", "none here")
    monkeypatch.setenv("GAUDI_TUI_REQUIRE", "prometheus,slurmd")
    with pytest.raises(pytest.UsageError, match="GAUDI_TUI_REQUIRE names slurmd; the components are"):
        required.required()


def test_install_system_fails_under_ci_when_it_cannot_install(
    bare_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [str(bare_path / "bash"), str(ROOT / "scripts" / "install-system.sh")]
    here = subprocess.run(script, capture_output=True, text=True, timeout=30)
    assert here.returncode == 0 and "will skip" in here.stderr, here.stderr
    monkeypatch.setenv("CI", "true")
    ci = subprocess.run(script, capture_output=True, text=True, timeout=30)
    assert ci.returncode == 1, ci.stderr
    assert "CI needs tmux prometheus" in ci.stderr and "will skip" not in ci.stderr
