"""Fixtures for training-job tests: small CPU specs, waiting on run folders, and a guard that no
process started by a test (found by its GAUDI_TUI_HOME) outlives the test."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import TERMINAL, effective_state

DATA = Path(__file__).resolve().parent / "data"
GAUDI2 = Accelerator("hpu", "fake", device_count=8, device_name="GAUDI2", dtype="bfloat16")
GAUDI1 = Accelerator("hpu", "fake", device_count=8, device_name="GAUDI", dtype="bfloat16")


def tiny(**changes: object) -> JobSpec:
    """A demo fine-tune small enough for 2 shared cores: short sequences, small batches."""
    base = {
        "max_seq_len": 64,
        "batch_size": 8,
        "max_steps": 20,
        "warmup_steps": 2,
        "logging_steps": 1,
        "device": "cpu",
    }
    base.update(changes)
    return JobSpec(**base)  # type: ignore[arg-type]


def wait_for(predicate: Callable[[], object], timeout: float, what: str, poll: float = 0.2) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def wait_done(run: RunFolder, timeout: float = 120.0) -> str:
    def done() -> str | None:
        status = run.status()
        state = effective_state(status, time.time()) if status else None
        return state if state in TERMINAL else None

    try:
        return str(wait_for(done, timeout, f"{run.id} to end"))
    except AssertionError:
        raise AssertionError(f"{run.id} did not end; log tail:\n{log_tail(run)}") from None


def log_tail(run: RunFolder, lines: int = 120) -> str:
    try:
        return "\n".join(run.log_path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def events(run: RunFolder, kind: str | None = None) -> list[dict]:
    try:
        rows = [json.loads(line) for line in run.metrics_path.read_text().splitlines() if line.strip()]
    except OSError:
        return []
    return [r for r in rows if kind is None or r.get("event") == kind]


def last_step(run: RunFolder) -> int:
    logs = events(run, "log")
    return int(logs[-1]["step"]) if logs else 0


def processes_of(home: Path) -> list[psutil.Process]:
    """Live processes whose environment carries this test's GAUDI_TUI_HOME."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get("GAUDI_TUI_HOME") == str(home) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


@pytest.fixture(autouse=True)
def no_stray_processes(gaudi_home: Path):
    """After each test: nothing it started may still run (supervisors get a few seconds to finish)."""
    yield
    deadline = time.monotonic() + 15
    strays = processes_of(gaudi_home)
    while strays and time.monotonic() < deadline:
        time.sleep(0.3)
        strays = processes_of(gaudi_home)
    described = [f"{p.pid} {' '.join(p.cmdline())[:120]}" for p in strays]
    for proc in strays:
        try:
            proc.kill()
        except psutil.Error:
            pass
    assert not described, "processes outlived the test:\n" + "\n".join(described)


def replay(run_id: str | None = None, recorded: str = "runs") -> RunFolder:
    """Copy a recorded run folder (tests/jobs/data/runs or ray-runs, see its README) into this
    test's runs folder."""
    from gaudi_tui.core.jobs import runfolder

    source = sorted((DATA / recorded).iterdir())[-1] if run_id is None else DATA / recorded / run_id
    target = runfolder.runs_dir() / source.name
    target.mkdir(mode=0o700)
    for item in source.iterdir():
        (target / item.name).write_bytes(item.read_bytes().replace(b"{RUN}", str(target).encode()))
    return RunFolder(target)
