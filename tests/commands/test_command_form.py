"""'your command' in the Training form, with Pilot: only its settings shown, launched, charted,
and the screen says how `s` stops it before it is pressed."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Select, Static

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.job_form import JobFormScreen
from gaudi_tui.ui.screens.training import TrainingScreen
from tests.conftest import CPU, PYTHON
from tests.jobs.conftest import events
from tests.pilot import settle


async def test_your_command_from_the_form(project: Path) -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("4", "n")
        form = app.screen
        assert isinstance(form, JobFormScreen)
        assert not form.query_one("#f-command").display and form.query_one("#f-lora").display
        form.query_one("#preset", Select).value = "your command"
        await pilot.pause()
        assert form.query_one("#f-kind", Select).value == "command"
        assert form.query_one("#f-command").display and not form.query_one("#f-lora").display
        form.query_one("#f-command", Input).value = f"{PYTHON} loop.py 6"
        form.query_one("#f-workdir", Input).value = str(project)
        await pilot.press("ctrl+s")
        await settle(pilot, lambda: isinstance(app.screen, TrainingScreen) and runfolder.all_runs(), 30)
        (run,) = runfolder.all_runs()
        await settle(pilot, lambda: (s := run.status()) is not None and s.state == "succeeded", 90)
        await pilot.press("d")
        await settle(
            pilot,
            lambda: "stop     s sends SIGINT" in str(app.screen.query_one("#job-details", Static).render()),
        )
        details = str(app.screen.query_one("#job-details", Static).render())
        assert f"command              {PYTHON} loop.py 6" in details and "lora " not in details
    assert run.spec().kind == "command" and run.spec().command == (PYTHON, "loop.py", "6")
    assert [e["step"] for e in events(run, "log")] == [1, 2, 3, 4, 5, 6]
