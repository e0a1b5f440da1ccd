"""The local supervisor's watch survives a check that raises (issue 38, A.4): a kind's per-poll
check (the command's stop by signals) that raised ended the supervisor and orphaned the job's
processes. Now it is written to supervisor.log once, and the launcher is watched to its end. The
check is made to raise on purpose (a kind's bug: any exception)."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.targets.local import Supervision
from tests.conftest import PYTHON


class Raising(Supervision):
    def __init__(self) -> None:
        super().__init__()
        self.polls = 0

    def on_poll(self, attempt: Attempt, child: subprocess.Popen[bytes]) -> None:
        self.polls += 1
        raise OSError("a kind's bug")


def test_the_launcher_is_watched_to_its_end_when_a_check_raises(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = runfolder.create(JobSpec(name="watched"), accelerator="cpu")
    attempt = Attempt(run, JobSpec(name="watched"), None, False, threading.Event(),
                      lambda **changes: None, lambda: JobStatus(state="running"))  # fmt: skip
    child = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(1); raise SystemExit(3)"])
    supervision = Raising()
    assert supervision.watch(attempt, child) == 3
    assert supervision.polls >= 3
    assert capsys.readouterr().err.count("the kind's check failed") == 1
