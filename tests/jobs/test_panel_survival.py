"""A real terminal: launch from the form, SIGKILL the panel, the job goes on; a new panel finds it."""

from __future__ import annotations

import os
import shlex
import signal
from pathlib import Path

import pytest
from textual.widgets import DataTable

from gaudi_tui.core.jobs import control, runfolder
from gaudi_tui.ui.app import GaudiApp
from tests.conftest import CPU, PYTHON, child_env
from tests.jobs.conftest import last_step, wait_done, wait_for
from tests.pilot import settle
from tests.shell.test_tmux import NEEDS_TMUX, Tmux, socket_name

pytestmark = [
    pytest.mark.slow,
    NEEDS_TMUX,
]


async def test_job_survives_a_killed_panel_and_a_new_panel_shows_its_newer_metrics(tmp_path: Path) -> None:
    try:
        await _scenario(tmp_path)
    finally:
        for run in runfolder.all_runs():
            assert run.path.is_relative_to(tmp_path), run.path  # only what this test made
            try:
                control.kill(run)
            except control.JobControlError:
                pass  # already ended


async def _scenario(tmp_path: Path) -> None:
    tmux = Tmux(socket_name("jobs", tmp_path), child_env())
    command = f"exec {shlex.quote(PYTHON)} -m gaudi_tui"
    tmux.run("new-session", "-d", "-s", "panel", "-x", "100", "-y", "30", command)
    try:
        tmux.wait_for("cpu: ", 60)  # the accelerator probe finished
        tmux.run("send-keys", "-t", "panel", "4")
        tmux.wait_for("No jobs yet", 60)
        tmux.run("send-keys", "-t", "panel", "n")
        tmux.wait_for("New training job", 60)
        tmux.run("send-keys", "-t", "panel", "C-s")  # the demo fine-tune preset as it is
        (run,) = wait_for(runfolder.all_runs, 30, "the run folder")
        wait_for(lambda: last_step(run) >= 1, 120, "the first metrics")
        tmux.wait_for("running", 60)
        panel_pid = int(tmux.run("display", "-p", "-t", "panel", "#{pane_pid}"))
        os.kill(panel_pid, signal.SIGKILL)
        wait_for(lambda: not Path(f"/proc/{panel_pid}").exists(), 10, "the panel to die")
    finally:
        tmux.run("kill-server")
    seen = last_step(run)
    wait_for(lambda: last_step(run) > seen, 120, "metrics written after the panel died")
    assert run.status().state == "running"

    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        table = app.screen.query_one("#jobs", DataTable)
        await settle(pilot, lambda: table.row_count, 30, "the job's row")
        job, state, _, step, *_ = (str(c) for c in table.get_row_at(0))
        assert job.endswith(run.id[-4:]) and state == "running"
        assert int(step.split("/")[0]) > seen
        await pilot.press("s")  # graceful stop from the new panel
        assert run.stop_path.exists()
    assert wait_done(run) == "stopped"
    assert run.newest_complete_checkpoint() is not None
