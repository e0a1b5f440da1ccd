"""Your own command as a Ray job, on the real two-node loopback cluster of conftest.py.

The scripts are the ones a user writes (tests/commands/scripts.py: none imports gaudi-tui). The
cluster's storage_path is a folder of its own, not the panel's runs folder, so nothing reaches the
panel but through the job's log stream (metrics, the wrapper's marker) and the Jobs API.
"""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import psutil
import pytest

from gaudi_tui.core.demo import model_dir
from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.kinds import command, command_cluster
from gaudi_tui.core.jobs.monitor import Monitor
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec, from_mapping
from gaudi_tui.core.jobs.status import TERMINAL
from gaudi_tui.core.jobs.targets.ray import cluster
from gaudi_tui.core.jobs.targets.ray import record as ray_record
from tests.commands import scripts
from tests.conftest import PYTHON
from tests.jobs.conftest import events, log_tail
from tests.ray.cluster import ROOT, RayTestCluster
from tests.ray.test_ray_jobs import state_of, submit_when_free, wait, wait_done

PRINTED = re.compile(r"\{'loss': '([^']+)'")
SLOW_JSON = '''\
"""A plain loop that prints one JSON object per step, slowly."""
import json
import time

for step in range(1, 400):
    print(json.dumps({"step": step, "loss": 10.0 / step, "lr": 0.1}), flush=True)
    time.sleep(0.2)
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    scripts.write(folder, "train.py", scripts.HF_TRAINER)
    scripts.write(folder, "slow_json.py", SLOW_JSON)
    scripts.train_file(folder)
    return folder


def command_spec(
    ray_cluster: RayTestCluster, storage: Path, project: Path, words: list[str], **changes: object
) -> JobSpec:
    values: dict[str, object] = {
        "kind": "command",
        "command": words,
        "workdir": str(project),
        "device": "cpu",
        "target": "ray",
        "ray_address": ray_cluster.address,
        "storage_path": str(storage),
        "kill_grace_s": 3.0,
        # The second node has the fake habana_frameworks on its path; the command must not see it.
        "env": {"PYTHONPATH": str(ROOT)},
    }
    values.update(changes)
    return from_mapping(values)


def left_on_the_cluster(storage: Path) -> list[str]:
    """Processes still running in the cluster-side folders of the test (the command's, its ranks)."""
    found = []
    for proc in psutil.process_iter(["pid", "cwd", "cmdline"]):
        cwd = proc.info["cwd"] or ""
        if cwd.startswith(str(storage)) or any(str(storage) in a for a in proc.info["cmdline"] or ()):
            found.append(f"{proc.pid} {' '.join(proc.info['cmdline'] or ())[:120]}")
    return found


def ended(run: RunFolder) -> bool:
    return state_of(run) in TERMINAL


def jobs_left(run: RunFolder, address: str) -> list[str]:
    """Ray jobs of this run (its attempts and their stop-flag jobs) that have not ended."""
    listed = cluster.Jobs(address).sdk().list_jobs()
    mine = [j for j in listed if (j.submission_id or "").startswith(f"gaudi-tui-{run.id}-")]
    assert mine, "the run's jobs are not listed"
    return [f"{j.submission_id} {j.status}" for j in mine if str(j.status.value) not in cluster.TERMINAL]


@pytest.mark.slow
def test_trainer_script_on_ray_charts_stops_at_one_checkpoint_and_resumes(
    ray_cluster: RayTestCluster, project: Path, tmp_path: Path
) -> None:
    storage = tmp_path / "cluster-storage"
    args = ["train.py", "--model_name_or_path", str(model_dir()), "--train_file", "train.txt",
            "--output_dir", "out", "--logging_steps", "2", "--max_steps", "400", "--step_sleep", "0.05"]  # fmt: skip
    run = submit_when_free(command_spec(ray_cluster, storage, project, [PYTHON, *args]))
    assert "shipped with the job" in command_cluster.entry(run.spec()).words
    wait(lambda: len(events(run, "log")) >= 2 or ended(run), 180, "two logged steps", run)
    assert not ended(run), log_tail(run)
    assert command.wrapper_active(run)  # the callback's marker, mirrored from the cluster
    assert "stops gracefully" in command.stop_mode(run, run.spec())
    on_cluster = RunFolder(storage / run.id)
    assert not (run.path / "work").exists() and (on_cluster.path / "work" / "train.py").is_file()

    control.stop(run)  # the KV flag → the driver → STOP in the cluster-side run folder
    assert wait_done(run, 120) == "stopped", log_tail(run)
    log = run.log_path.read_text(errors="replace")
    (step,) = {int(s) for s in re.findall(r"\[gaudi-tui\] rank 0 stopping at step (\d+)", log)}
    out = on_cluster.path / "work" / "out"
    assert [p.name for p in out.iterdir()] == [f"checkpoint-{step}"]  # one checkpoint, on the cluster
    assert [e["checkpoint"] for e in events(run, "save")] == [str(out / f"checkpoint-{step}")]
    logs = events(run, "log")
    assert [f"{e['loss']:.4g}" for e in logs] == PRINTED.findall(log)[: len(logs)]  # the script's own
    assert [e["step"] for e in logs][-1] == step and events(run, "end")[-1]["stopped"] is True
    assert "GAUDI_TUI_METRIC" not in log and "GAUDI_TUI_WRAPPER" not in log  # split out by the mirror
    assert on_cluster.stop_path.exists()  # written there by the driver, from the KV flag

    assert control.resume(run) == f"resuming from checkpoint-{step}"
    wait(lambda: len(events(run, "begin")) == 2 and events(run, "log")[-1]["step"] > step, 180,
         "the resumed attempt to log", run)  # fmt: skip
    assert events(run, "begin")[-1]["step"] == step  # Trainer continued from the checkpoint
    record = ray_record.read_record(run)
    assert record is not None and f"--resume {out / f'checkpoint-{step}'}" in record.entrypoint
    control.kill(run)
    assert wait_done(run, 60) == "cancelled"
    wait(lambda: not jobs_left(run, ray_cluster.address), 15, "the run's Ray jobs to end")
    wait(lambda: not left_on_the_cluster(storage), 15, "the command's processes to end")


@pytest.mark.slow
def test_json_loop_in_a_cluster_folder_charts_reattaches_and_stops_by_sigint(
    ray_cluster: RayTestCluster, project: Path, tmp_path: Path
) -> None:
    storage = tmp_path / "cluster-storage"
    spec = command_spec(ray_cluster, storage, project, [PYTHON, "slow_json.py"], ray_workdir=str(project))
    run = submit_when_free(spec)
    wait(lambda: len(events(run, "log")) >= 3 or ended(run), 120, "three values", run)
    assert not ended(run), log_tail(run)
    assert "SIGINT" in command.stop_mode(run, run.spec())  # no Trainer: a stop is by signals
    supervisor = run.status().supervisor  # type: ignore[union-attr]
    assert supervisor is not None
    os.kill(supervisor.pid, signal.SIGKILL)  # the panel's host lost its supervisor; the cluster did not
    wait(lambda: not supervisor.alive(), 10, "the supervisor to die", run)
    said = control.resume(run)
    assert said.startswith("re-attached: Ray job") and "RUNNING" in said, said
    seen = len(events(run, "log"))
    wait(lambda: len(events(run, "log")) >= seen + 3, 60, "values after the re-attach", run)
    control.stop(run)
    assert wait_done(run, 60) == "stopped", log_tail(run)
    status = run.status()
    assert status is not None and status.error == "stopped by SIGINT"
    record = ray_record.read_record(run)
    assert record is not None
    printed = _values(cluster_log(ray_cluster.address, record.submission_id))  # the job's own log
    assert len(printed) >= seen + 3
    # every value once, in order, across the re-attach: the mirror and the metrics continue, never
    # repeat, and lose nothing the job printed (both are checked against the cluster's log, not each other)
    assert _values(run.log_path.read_text()) == printed
    assert [(e["step"], e["loss"]) for e in events(run, "log")] == [(p["step"], p["loss"]) for p in printed]
    assert events(run, "end")[-1]["stopped"] is True
    (view,) = Monitor().poll()
    assert view.metrics_found is True and view.loss == printed[-1]["loss"]
    assert not (storage / run.id / "work").exists()  # it ran in the cluster's own folder
    with pytest.raises(control.JobControlError, match="without the panel's Trainer callback"):
        control.resume(run)
    wait(lambda: not jobs_left(run, ray_cluster.address), 15, "the run's Ray jobs to end")
    wait(lambda: not left_on_the_cluster(storage) and not _in(project), 15, "the loop to end")


def cluster_log(address: str, submission_id: str) -> str:
    """The job's log as the cluster keeps it (read from Ray, not from the panel's mirror)."""
    from ray.job_submission import JobSubmissionClient

    return str(JobSubmissionClient(address).get_job_logs(submission_id))


def _values(log: str) -> list[dict[str, float]]:
    return [json.loads(x) for x in log.splitlines() if x.startswith("{")]


def _in(folder: Path) -> list[int]:
    return [p.pid for p in psutil.process_iter(["cwd"]) if (p.info["cwd"] or "") == str(folder)]
