"""The job form as a new user meets it, with Pilot: only the chosen kind's and target's settings,
what to fill first at the top, each setting's problem under it, and no key that wipes a value."""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import Collapsible, Input, Select, Static

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.job_form import JobFormScreen
from tests.conftest import CPU
from tests.pilot import settle


def visible(widget: Widget) -> bool:
    """Shown: neither it nor a container above it is hidden (a folded Collapsible hides its contents)."""
    return all(node.display for node in widget.ancestors_with_self if isinstance(node, Widget))


def shown_settings(form: JobFormScreen) -> list[str]:
    """The settings a user sees (not folded away), top to bottom."""
    editors = form.query("Input, Select, Checkbox")
    return [str(w.id)[2:] for w in editors if (w.id or "").startswith("f-") and visible(w)]


def problem_of(form: JobFormScreen, name: str) -> str:
    box = form.query_one(f"#p-{name}", Static)
    return str(box.render()) if visible(box) else ""


async def open_form(pilot) -> JobFormScreen:  # noqa: ANN001
    await pilot.press("4", "n")
    form = pilot.app.screen
    assert isinstance(form, JobFormScreen)
    return form


async def test_your_command_shows_its_own_settings_command_first_and_keeps_them_per_target() -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 40)) as pilot:
        form = await open_form(pilot)
        form.query_one("#preset", Select).value = "your command"
        await pilot.pause()
        shown = shown_settings(form)
        assert shown[:2] == ["command", "workdir"], shown
        assert len(shown) <= 15, shown  # was 35: every target's Ray and Slurm settings, command 23rd
        assert not [n for n in shown if n.startswith(("ray_", "slurm_")) or n in ("lora", "model")]
        form.query_one("#f-command", Input).value = "train.py --lr 1e-4"

        form.query_one("#f-target", Select).value = "slurm"
        await pilot.pause()
        shown = shown_settings(form)
        assert "slurm_partition" in shown and "slurm_nodes" in shown and "ray_address" not in shown
        assert shown.index("slurm_nodes") < shown.index("processes")  # the target's own, after target

        form.query_one("#f-target", Select).value = "ray"
        await pilot.pause()
        shown = shown_settings(form)
        assert "ray_address" in shown and not [n for n in shown if n.startswith("slurm_")]
        form.query_one("#f-kind", Select).value = "trainer"
        await pilot.pause()
        shown = shown_settings(form)
        assert shown[:2] == ["model", "dataset"] and "command" not in shown and "workers" in shown
        form.query_one("#f-kind", Select).value = "command"
        await pilot.pause()
        assert form.query_one("#f-command", Input).value == "train.py --lr 1e-4"  # kept while hidden

        form.query_one("#form-advanced", Collapsible).collapsed = False
        await pilot.pause()
        assert "resume_flag" in shown_settings(form) and "kill_grace_s" in shown_settings(form)


async def test_a_key_typed_in_a_field_edits_it_and_never_clears_it() -> None:
    """Tab into the name and press a key: the old form selected the whole value on focus, so one
    backspace (or any letter) replaced the job's name without a word."""
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 40)) as pilot:
        form = await open_form(pilot)
        name = form.query_one("#f-name", Input)
        while app.focused is not name:  # as a user gets there: tab from the preset
            await pilot.press("tab")
        await pilot.press("backspace")
        assert name.value == "demo fine-tun"
        await pilot.press("e", "!")
        assert name.value == "demo fine-tune!"


async def test_each_problem_shows_under_its_setting_and_a_refused_launch_goes_to_the_first() -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 40)) as pilot:
        form = await open_form(pilot)
        assert not [n for n in shown_settings(form) if problem_of(form, n)]  # a preset has none
        form.query_one("#f-learning_rate", Input).value = "2"
        form.query_one("#f-batch_size", Input).focus()
        await pilot.press("backspace", "backspace", "x")  # typed: 16 → x
        await settle(pilot, lambda: problem_of(form, "batch_size") == "'x' is not a whole number")
        form.query_one("#preset", Select).focus()
        await pilot.press("ctrl+s")
        await settle(pilot, lambda: app.focused is form.query_one("#f-batch_size"))
        assert "batch_size: 'x' is not a whole number" in str(form.query_one("#form-problems").render())

        form.query_one("#f-batch_size", Input).value = "8"
        await settle(pilot, lambda: problem_of(form, "learning_rate") == "2 is not between 0 and 1")
        assert problem_of(form, "batch_size") == ""
        form.query_one("#f-learning_rate", Input).value = "0.001"
        form.query_one("#f-warmup_steps", Input).value = "500"  # an advanced one, folded away
        await settle(pilot, lambda: not problem_of(form, "learning_rate"))
        await pilot.press("ctrl+s")
        await settle(pilot, lambda: app.focused is form.query_one("#f-warmup_steps"))
        assert not form.query_one("#form-advanced", Collapsible).collapsed  # unfolded to show it
        assert problem_of(form, "warmup_steps") == "500 is more than max_steps (200)"
        assert runfolder.all_runs() == []


async def test_a_command_launch_refused_by_the_checks_says_so_under_the_command() -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 40)) as pilot:
        form = await open_form(pilot)
        form.query_one("#preset", Select).value = "your command"
        await pilot.pause()
        assert problem_of(form, "command") == ""  # nothing said before the user tries
        await pilot.press("ctrl+s")  # no command typed: refused by the launch's own checks
        await settle(pilot, lambda: problem_of(form, "command").startswith("type the command to run"))
        await settle(pilot, lambda: app.focused is form.query_one("#f-command"))
        form.query_one("#f-command", Input).value = "train.py"
        await settle(pilot, lambda: problem_of(form, "command") == "")  # gone once it changes
        assert runfolder.all_runs() == []
