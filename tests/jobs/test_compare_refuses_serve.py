"""Compare only what can be compared (issue 42 item 4): a serve job marked beside a fine-tune is
refused with the reason, by `gaudi-tui jobs compare` and by the Training screen's `C`, instead of a
table of dashes and a diff of serve fields."""

from __future__ import annotations

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus
from gaudi_tui.ui.screens.training import TrainingScreen
from tests.jobs.conftest import replay
from tests.jobs.test_training_screen import make_app, rows
from tests.pilot import settle


def served() -> RunFolder:
    """A serve job that ran and ended (its spec as the form's "serve a model" preset writes it)."""
    run = runfolder.create(JobSpec(name="serve", kind="serve", max_steps=0), "cpu", now=1_000.0)
    run.write_status(
        JobStatus(state="stopped", created=1_000.0, queued=1_000.0, started=1_001.0, ended=1_100.0)
    )
    return run


def test_the_command_refuses_a_serve_job_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    fine_tune, server = replay(), served()
    assert main(["jobs", "compare", fine_tune.id, server.id]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{server.id} is a serve job: a model server has no steps, loss or throughput" in captured.err


async def test_the_training_screen_refuses_a_marked_serve_job() -> None:
    replay(), served()
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        await settle(pilot, lambda: len(rows(app)) == 2)
        training = app.screen
        assert isinstance(training, TrainingScreen)
        await pilot.press("m", "down", "m", "C")
        await settle(pilot, lambda: any("Not compared" in n.message for n in app._notifications))  # noqa: SLF001
        assert app.screen is training
        said = next(n.message for n in app._notifications if "Not compared" in n.message)  # noqa: SLF001
        assert "is a serve job" in said and "m unmarks a run" in said
