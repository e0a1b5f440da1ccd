"""Reading run folders while they are written: metrics, log tail, status, checkpoints."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.monitor import Monitor, format_duration
from gaudi_tui.core.jobs.runfolder import COMPLETE_MARKER, RunFolder
from gaudi_tui.core.jobs.series import ChartSeries
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus, ProcRef, effective_state
from gaudi_tui.core.jobs.tailing import LogTail, MetricsReader
from tests.conftest import PYTHON


def _log(step: int, t: float, loss: float) -> str:
    return json.dumps({"event": "log", "step": step, "time": t, "loss": loss, "max_steps": 100}) + "\n"


def test_metrics_wait_for_a_complete_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    reader = MetricsReader(path)
    line = _log(1, 10.0, 5.0)
    path.write_text(line[:20])
    assert not reader.poll()
    with path.open("a") as fh:
        fh.write(line[20:])
    assert reader.poll()
    assert [p.loss for p in reader.points] == [5.0]


def test_a_resume_drops_points_logged_after_its_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(_log(s, float(s), 10.0 - s) for s in (1, 2, 3, 4)))
    reader = MetricsReader(path)
    reader.poll()
    with path.open("a") as fh:
        fh.write(json.dumps({"event": "begin", "step": 2, "max_steps": 100}) + "\n" + _log(3, 9.0, 1.0))
    reader.poll()
    assert [(p.step, p.loss) for p in reader.points] == [(1, 9.0), (2, 8.0), (3, 1.0)]


def test_eta_from_recent_step_time(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(_log(s, 100.0 + 0.5 * s, 1.0) for s in range(1, 11)))
    reader = MetricsReader(path)
    reader.poll()
    assert reader.seconds_per_step() == pytest.approx(0.5)


def smoothed(tmp_path: Path, losses: list[float]) -> list[float]:
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(_log(s, float(s), loss) for s, loss in enumerate(losses, start=1)))
    charts = ChartSeries(path)
    charts.poll()
    return list(charts.data().lines["smoothed"][1])


def test_smoothing_is_a_debiased_moving_average(tmp_path: Path) -> None:
    assert smoothed(tmp_path, [4.0, 4.0, 4.0]) == pytest.approx([4.0, 4.0, 4.0])
    out = smoothed(tmp_path, [10.0, 0.0, 0.0, 0.0])
    assert out[0] == pytest.approx(10.0) and out[1] < 10.0 and out == sorted(out, reverse=True)


def test_log_tail_stays_bounded_under_a_flood(tmp_path: Path) -> None:
    path = tmp_path / "stdout.log"
    tail = LogTail(path, max_lines=100, max_bytes=64 * 1024)
    with path.open("w") as fh:
        fh.writelines(f"line {i:07d} {'x' * 40}\n" for i in range(200_000))  # ~10 MB, 20 s at 10k lines/s
    started = time.perf_counter()
    new = tail.poll()
    assert time.perf_counter() - started < 0.5
    assert len(new) == 100 and len(tail.lines) == 100
    assert new[-1].startswith("line 0199999")
    assert tail.skipped_bytes > 9_000_000
    with path.open("a") as fh:
        fh.write("last one\npartial")
    assert tail.poll() == ["last one"]


def test_duration_format() -> None:
    assert format_duration(None) == "—"
    assert format_duration(75) == "1:15"
    assert format_duration(3 * 3600 + 5) == "3:00:05"


def test_run_folder_is_private_and_holds_spec_and_queued_status() -> None:
    run = runfolder.create(JobSpec(name="My Job!"), accelerator="cpu")
    assert stat.S_IMODE(os.stat(run.path).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(run.path.parent).st_mode) == 0o700
    assert "-my-job-" in run.id
    assert run.spec() == JobSpec(name="My Job!")
    assert run.status().state == "queued"
    assert runfolder.find(run.id[-4:]) == run


def test_status_survives_a_torn_write(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    path.write_text('{"state": "runn')
    assert runfolder.RunFolder(tmp_path).status() is None


def test_only_complete_checkpoints_count(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    for step, files in (
        (5, ["model.safetensors", "trainer_state.json", COMPLETE_MARKER]),
        (9, ["adapter_model.safetensors", "trainer_state.json", COMPLETE_MARKER]),
        (12, ["model.safetensors", "trainer_state.json"]),  # a rank had not finished
        (14, ["rng_state_1.pth"]),
    ):
        folder = run.checkpoints_dir / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        for name in files:
            (folder / name).write_text("x")
    assert run.newest_complete_checkpoint() == run.checkpoints_dir / "checkpoint-9"
    (run.checkpoints_dir / "checkpoint-9" / "checkpoint-is-incomplete.txt").write_text("")
    assert run.newest_complete_checkpoint() == run.checkpoints_dir / "checkpoint-5"


def test_a_running_job_whose_supervisor_died_is_lost() -> None:
    child = subprocess.Popen([PYTHON, "-c", "pass"])
    ref = ProcRef.of(child.pid)
    child.wait()
    assert ref is not None and not ref.alive()
    now = time.time()
    assert effective_state(JobStatus(state="running", supervisor=ref, queued=now), now) == "lost"
    me = ProcRef.of(os.getpid())
    assert effective_state(JobStatus(state="running", supervisor=me, queued=now), now) == "running"
    # A reused PID (same number, other start time) is not our supervisor.
    impostor = ProcRef(os.getpid(), me.started - 1000)
    assert effective_state(JobStatus(state="running", supervisor=impostor, queued=now), now) == "lost"
    assert effective_state(JobStatus(state="queued", queued=now - 120), now) == "lost"


def test_monitor_finds_runs_created_after_it_started() -> None:
    monitor = Monitor()
    assert monitor.poll() == []
    run = runfolder.create(JobSpec(), accelerator="cpu")
    views = monitor.poll()
    assert [v.id for v in views] == [run.id] and views[0].state == "queued"


def test_a_run_with_a_broken_spec_is_listed_with_the_reason() -> None:
    run = runfolder.create(JobSpec(), accelerator="cpu")
    run.spec_path.write_text("max_steps = [\n")
    (view,) = Monitor().poll()
    assert view.name == "(unreadable spec.toml)"
    assert "spec.toml: not valid TOML" in view.error
