"""`gaudi-tui config`: the path, every effective value with its origin, problems, --json."""

from __future__ import annotations

import json
import subprocess

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core import settings
from tests.conftest import PYTHON, child_env


def test_text_lists_every_setting_with_its_origin(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    settings.config_path().write_text('theme = "nord"\n[keys]\n"devices.choose" = "enter"\n')
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    monkeypatch.delenv("GAUDI_TUI_PROMETHEUS", raising=False)
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert f"config file: {settings.config_path()}" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert lines["theme"].split()[1:] == ["nord", "file"]
    assert lines["cluster.ray_address"].split()[1:] == ["127.0.0.1:6379", "$RAY_ADDRESS"]
    assert lines["refresh_interval"].split()[1:] == ["1.0", "default"]
    assert "runs" in lines["runs_dir"] and "(not set)" in lines["cluster.prometheus_url"]
    assert "devices.choose = enter" in out
    assert {spec.name for spec in settings.SPECS} <= set(lines)


def test_problems_are_listed_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    settings.config_path().write_text("refresh_interval = -1\n")
    assert main(["config"]) == 1
    assert "problem: config.toml line 1: refresh_interval must be" in capsys.readouterr().out


def test_json_in_a_real_child_process(gaudi_home) -> None:
    settings.config_path().write_text("[chat]\nquantization = 'nf4'\n")
    done = subprocess.run(
        [PYTHON, "-m", "gaudi_tui.cli", "config", "--json"],
        env=child_env(GAUDI_TUI_HOME=str(gaudi_home), GAUDI_TUI_THEME="textual-light"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["path"] == str(settings.config_path()) and data["exists"] is True
    assert data["settings"]["chat.quantization"] == {
        "value": "nf4",
        "origin": "file",
        "env": "GAUDI_TUI_CHAT_QUANTIZATION",
    }
    assert data["settings"]["theme"] == {
        "value": "textual-light",
        "origin": "environment",
        "env": "GAUDI_TUI_THEME",
    }
    assert data["settings"]["keys"]["value"] == {} and data["problems"] == []
