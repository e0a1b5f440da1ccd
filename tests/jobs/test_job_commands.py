"""`gaudi-tui train` and `gaudi-tui jobs` without starting a job: dry run, fields, list, logs, errors."""

from __future__ import annotations

import json
import subprocess

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.jobs import spec as spec_mod
from tests.conftest import PYTHON, child_env
from tests.jobs.conftest import replay


def test_dry_run_prints_the_prepared_spec(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "lora", "--set", "device=cpu", "--set", "max_steps=20", "--dry-run"]) == 0
    printed = spec_mod.from_toml(capsys.readouterr().out)
    assert (printed.lora, printed.max_steps, printed.launcher, printed.device) == (True, 20, "single", "cpu")


def test_dry_run_lists_every_problem_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["train", "demo", "--set", "device=cpu", "--set", "batch_size=0", "--set", "dataset=/nope.csv"]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "batch_size: 0 is not between 1 and 65536" in err
    assert "dataset: dataset file /nope.csv does not exist" in err


def test_unknown_setting_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "demo", "--set", "batchsize=4"]) == 2
    assert "unknown setting 'batchsize' (did you mean 'batch_size'?)" in capsys.readouterr().err


def test_fields_lists_each_setting_with_default_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "demo", "--fields"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(spec_mod.field_names())
    assert out[0].split()[:2] == ["name", "demo"]


def test_jobs_lists_logs_and_refuses_actions_on_a_finished_job(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs"]) == 0
    assert "no jobs yet" in capsys.readouterr().out
    run = replay()
    assert main(["jobs"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["ID", "NAME", "STATE", "ELAPSED", "STEP", "ETA", "LOSS", "NOTE"]
    assert row.split()[:6] == [run.id, "demo", "fine-tune", "succeeded", "3:42", "200/200"]
    assert main(["jobs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["state"] == "succeeded"
    assert main(["jobs", "logs", run.id[-4:], "-n", "2"]) == 0
    last_two = capsys.readouterr().out.splitlines()
    assert last_two[0].startswith("{'train_runtime'") and last_two[1].startswith("Writing model shards: 100%")
    assert main(["jobs", "logs", run.id, "-f", "-n", "0"]) == 0  # finished: returns at once
    assert main(["jobs", "stop", run.id]) == 1
    assert "is succeeded: nothing to stop" in capsys.readouterr().err
    assert main(["jobs", "resume", "nosuchjob"]) == 1
    assert "no job 'nosuchjob'" in capsys.readouterr().err


def test_a_ray_job_to_an_unreachable_cluster_is_refused_and_creates_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import socket

    from gaudi_tui.core.jobs import runfolder

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        address = f"http://127.0.0.1:{sock.getsockname()[1]}"
    code = main(
        ["train", "demo", "--set", "target=ray", "--set", f"ray_address={address}", "--set", "workers=2"]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert f"ray_address: cannot reach the Ray cluster at {address}" in err and "ssh -L 8265" in err
    assert runfolder.all_runs() == []
    assert main(["jobs", "nodes", address]) == 1
    assert "cannot reach the Ray cluster" in capsys.readouterr().err


def test_a_ray_job_without_an_address_says_where_to_give_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert main(["train", "demo", "--set", "target=ray", "--dry-run"]) == 2
    assert "ray_address: no cluster given" in capsys.readouterr().err


def test_the_job_list_does_not_import_the_job_controls() -> None:
    """`jobs` and `jobs --json` only read: the stop/kill/resume code (and the supervisor and alert
    sinks it brings) is not imported, so the list answers sooner."""
    replay()
    code = (
        "import sys\nfrom gaudi_tui.cli import main\nassert main(['jobs', '--json']) == 0\n"
        "print('control' if 'gaudi_tui.core.jobs.control' in sys.modules else 'no control', file=sys.stderr)"
    )
    done = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=child_env(), check=True)
    assert json.loads(done.stdout)[0]["state"] == "succeeded"
    assert done.stderr.strip().splitlines()[-1] == "no control"
