"""'serve a model' in the Training form, with Pilot: only the serve settings shown, launched, the job
list says when it is ready and where, the details say how `s` stops it, and `s` drains it."""

from __future__ import annotations

import pytest
from textual.widgets import Select, Static

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.serve import ready
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.job_form import JobFormScreen
from gaudi_tui.ui.screens.training import TrainingScreen
from tests.conftest import CPU
from tests.jobs.conftest import log_tail
from tests.pilot import settle
from tests.serve.conftest import READY_S, need_serving

need_serving()


@pytest.mark.slow
async def test_serve_a_model_from_the_form_until_ready_then_s_drains_it() -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(110, 44)) as pilot:
        await pilot.press("4", "n")
        form = app.screen
        assert isinstance(form, JobFormScreen)
        form.query_one("#preset", Select).value = "serve a model"
        await pilot.pause()
        assert form.query_one("#f-kind", Select).value == "serve"
        shown = {n for n in ("serve_model", "serve_port", "trust_remote_code", "lora", "command", "dataset")
                 if form.query_one(f"#f-{n}").display}  # fmt: skip
        assert shown == {"serve_model", "serve_port", "trust_remote_code"}
        await pilot.press("ctrl+s")
        await settle(pilot, lambda: isinstance(app.screen, TrainingScreen) and runfolder.all_runs(), 60)
        (run,) = runfolder.all_runs()
        details = app.screen.query_one("#job-details", Static)
        try:
            await settle(pilot, lambda: (i := ready.read(run.path)) is not None and i["ready"], READY_S)
        except AssertionError:
            raise AssertionError(log_tail(run)) from None
        url = ready.read(run.path)["url"]  # type: ignore[index]
        await settle(pilot, lambda: f"where    ready: {url} (transformers)" in str(details.render()), 30)
        assert "stop     s drains and stops the server" in str(details.render())
        await pilot.press("s")
        await settle(pilot, lambda: (s := run.status()) is not None and s.state == "stopped", 120)
    assert run.spec().kind == "serve" and run.spec().serve_engine == "transformers"
