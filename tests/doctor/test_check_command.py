"""`gaudi-tui check`: text, --json, exit codes, --explain FILE|-, on this machine and on controlled hosts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.doctor import checks as checks_pkg
from gaudi_tui.core.doctor.checks import ALL_CHECKS, by_id
from gaudi_tui.core.doctor.context import CheckContext
from tests.conftest import PYTHON, child_env
from tests.doctor.hosts import make_ctx

DEVICE_ACQUIRED = "RuntimeError: synStatus=20 [Device already acquired] Device acquire failed."
INT64 = (
    "RuntimeError: Error when trying to cast Long to Int, Input values range [9223372036854775807, "
    "9223372036854775807] exceeds Int range [-2147483648, 2147483647]"
)


def gaudi_tui(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "gaudi_tui", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )


def test_json_report_of_this_machine_is_complete_and_explained() -> None:
    done = gaudi_tui("check", "--json")
    report = json.loads(done.stdout)
    assert [item["id"] for item in report] == [c.id for c in ALL_CHECKS]
    for item in report:
        assert set(item) == {"id", "status", "finding", "explanation", "fix"}
        assert item["status"] in ("ok", "warn", "fail", "skip")
        assert item["finding"]
        if item["status"] == "fail":
            assert item["explanation"] and item["fix"], item["id"]
    failed = any(item["status"] == "fail" for item in report)
    assert done.returncode == (1 if failed else 0)


def test_text_report_lists_every_check_with_its_fix() -> None:
    done = gaudi_tui("check")
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"gaudi-tui check: {len(ALL_CHECKS)} checks in ")
    for check in ALL_CHECKS:
        assert f" {check.id} " in done.stdout
    if "✗ fail" in done.stdout:
        assert "        fix: " in done.stdout


@pytest.mark.parametrize(("lazy", "code"), [("0", 0), ("2", 1)])
def test_exit_code_follows_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], lazy: str, code: int
) -> None:
    subset = tuple(by_id()[i] for i in ("env.int64", "env.lazy_mode", "env.visible_modules"))
    env = {"PT_ENABLE_INT64_SUPPORT": "1", "PT_HPU_LAZY_MODE": lazy}
    monkeypatch.setattr(checks_pkg, "ALL_CHECKS", subset)
    monkeypatch.setattr(CheckContext, "for_this_host", classmethod(lambda cls, **kw: make_ctx(tmp_path, env)))
    assert main(["check", "--json"]) == code
    statuses = [item["status"] for item in json.loads(capsys.readouterr().out)]
    assert statuses == ["ok", "ok" if lazy == "0" else "fail", "ok"]


def test_timeout_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--timeout", "0"]) == 2
    assert "--timeout must be more than 0" in capsys.readouterr().err


def test_explain_a_log_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "stdout.log"
    log.write_text(f"loading model\n{INT64}\n{DEVICE_ACQUIRED}\n")
    assert main(["check", "--explain", str(log)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"2 known Gaudi error(s) in {log}:")
    assert "line 2: RuntimeError: Error when trying to cast Long to Int" in out
    assert "Long values cannot be cast to Int" in out and "PT_ENABLE_INT64_SUPPORT=1" in out
    assert "check: cards.busy" in out


def test_explain_without_a_known_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "ok.log"
    log.write_text("{'loss': 0.59, 'epoch': 3.0}\n")
    assert main(["check", "--explain", str(log)]) == 1
    assert "No known Gaudi error" in capsys.readouterr().out


def test_explain_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--explain", str(tmp_path / "nope.log")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_explain_stdin_as_json() -> None:
    done = gaudi_tui("check", "--explain", "-", "--json", stdin=f"{DEVICE_ACQUIRED}\n")
    assert done.returncode == 0
    [match] = json.loads(done.stdout)
    assert (match["id"], match["line"], match["check"]) == ("device-already-acquired", 1, "cards.busy")
    assert set(match) == {"id", "title", "line", "text", "count", "cause", "fix", "source", "check"}
