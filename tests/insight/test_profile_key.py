"""Training's `P` on a real running Trainer command job (a CPU run through the panel's wrapper, as in
test_profile_running_job.py): the dialog offers the command's default of steps, Enter asks the job
(here for 10), a second P while that profile is pending or taken is refused with the reason,
and Details lists the profile's top aten:: ops, host against device time and the step time inside
the window against before it, once the job has written it. A job that is no longer running is
refused with the reason, as `gaudi-tui jobs profile` refuses it. The dialog asks again for a number
out of range, and Esc asks nothing."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.widgets import Input, Static, TabbedContent

from gaudi_tui.core.insight.profile import DEFAULT_STEPS, MAX_STEPS
from gaudi_tui.core.jobs import control
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.training import TrainingScreen
from gaudi_tui.ui.screens.training_profile import ProfileDialog
from gaudi_tui.ui.widgets.insight_panel import InsightPanel
from tests.conftest import CPU
from tests.insight.test_profile_running_job import start
from tests.jobs.conftest import events, log_tail, no_stray_processes, wait_done, wait_for  # noqa: F401
from tests.pilot import settle

ASKED = 10


@pytest.mark.slow
async def test_p_profiles_the_running_job_and_details_lists_its_top_ops(tmp_path) -> None:
    run = start(tmp_path)
    wait_for(lambda: events(run, "log"), 120, "the job's first log")  # it is training now
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(110, 40)) as pilot:
        await pilot.press("4")
        screen = app.screen
        assert isinstance(screen, TrainingScreen)
        await settle(pilot, lambda: screen.selected == run.id and bool(screen.query(InsightPanel)))
        await pilot.press("P")
        await settle(pilot, lambda: isinstance(app.screen, ProfileDialog), what="the profile dialog")
        steps = app.screen.query_one("#profile-steps", Input)
        assert steps.value == str(DEFAULT_STEPS)
        steps.value = str(ASKED)  # a window long enough that the second P below comes inside it
        await pilot.press("enter")
        await settle(pilot, lambda: app.screen is screen, what="the dialog closed")
        assert screen.query_one(TabbedContent).active == "details"
        asked = f"A profile of {ASKED} steps asked of {run.id}"
        await settle(pilot, lambda: any(n.message.startswith(asked) for n in app._notifications))  # noqa: SLF001
        await pilot.press("P")  # one at a time: pending, or being taken, the answer is no
        busy = (
            f"No profile of {run.id}: a profile was asked for and the job has not begun it yet ({ASKED} steps).",
            f"No profile of {run.id}: a profile is being taken now ({ASKED} steps): wait for it to end.",
        )
        await settle(pilot, lambda: any(n.message in busy for n in app._notifications), what="the refusal")  # noqa: SLF001
        assert app.screen is screen
        panel = screen.query_one(InsightPanel)

        def shown() -> str:
            return str(panel.render()) if panel.display else ""

        await settle(pilot, lambda: "top ops by self time: aten::" in shown(), 60, "the profile in Details")
        (taken,) = events(run, "profile")
        assert taken["what"] == "taken" and taken["steps"] == ASKED
        assert f"profile of steps {taken['first_step']}–{taken['step']} (CPU)" in shown()
        assert "device none recorded (a CPU run" in shown()
        assert "step time inside the window" in shown()

        control.stop(run)
        assert wait_done(run, 120) in ("succeeded", "stopped"), log_tail(run)
        await pilot.press("P")
        said = f"No profile of {run.id}: the job is not running."
        await settle(pilot, lambda: any(n.message == said for n in app._notifications), what="the refusal")  # noqa: SLF001
        assert not isinstance(app.screen, ProfileDialog)


async def test_the_dialog_asks_again_for_a_number_out_of_range_and_esc_asks_nothing() -> None:
    answers: list[int | None] = []

    class Host(App[None]):
        def on_mount(self) -> None:
            self.push_screen(ProfileDialog("some-run"), answers.append)

    app = Host()
    async with app.run_test() as pilot:
        await settle(pilot, lambda: isinstance(app.screen, ProfileDialog))
        steps = app.screen.query_one("#profile-steps", Input)
        steps.value = str(MAX_STEPS + 1)
        await pilot.press("enter")
        error = app.screen.query_one("#profile-error", Static)
        await settle(pilot, lambda: f"1 to {MAX_STEPS}" in str(error.render()), what="the error")
        assert isinstance(app.screen, ProfileDialog) and answers == []
        steps.value = "12"
        await pilot.press("enter")
        await settle(pilot, lambda: answers == [12], what="the answer")
        app.push_screen(ProfileDialog("some-run"), answers.append)
        await settle(pilot, lambda: isinstance(app.screen, ProfileDialog))
        await pilot.press("escape")
        await settle(pilot, lambda: answers == [12, None], what="the cancel")
