"""The command line: help, version, usage errors."""

from __future__ import annotations

import subprocess

import pytest

from gaudi_tui import __version__
from gaudi_tui.cli import build_parser, main
from tests.conftest import PYTHON, child_env


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    for command in ("devices", "check", "chat", "train", "jobs"):
        assert command in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"gaudi-tui {__version__}"


@pytest.mark.parametrize("argv", [["--bogus"], ["nosuchcommand"]])
def test_unknown_arguments_are_a_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert "usage: gaudi-tui" in capsys.readouterr().err


def test_every_subcommand_has_help() -> None:
    parser = build_parser()
    for command in ("devices", "check", "chat", "train", "jobs"):
        with pytest.raises(SystemExit) as stop:
            parser.parse_args([command, "--help"])
        assert stop.value.code == 0


def test_module_entry_point_runs() -> None:
    done = subprocess.run(
        [PYTHON, "-m", "gaudi_tui", "--version"], capture_output=True, text=True, env=child_env()
    )
    assert done.returncode == 0
    assert done.stdout.startswith("gaudi-tui ")
