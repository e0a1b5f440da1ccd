"""`gaudi-tui serve --target local|slurm`: the command builds the very spec the Training form builds
for a serve on Slurm (the form driven with Pilot, the command through the real parser), refuses Ray
as the form does, and refuses Slurm settings without --target slurm."""

from __future__ import annotations

import pytest
from textual.widgets import Input, Select

from gaudi_tui.cli import build_parser, main
from gaudi_tui.commands import serve
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.kinds.serve_kind import LOCAL_OR_SLURM
from gaudi_tui.core.jobs.spec import JobSpec, SpecError
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.job_form import JobFormScreen
from tests.conftest import CPU
from tests.pilot import settle

SLURM = {"slurm_partition": "debug", "slurm_cards_per_node": "1", "slurm_time_limit": "30",
         "slurm_account": "acct", "slurm_qos": "normal", "slurm_gres_type": "gaudi2"}  # fmt: skip
"""What a user types in the form, by setting; the command takes the same by its options."""


def command_spec(*words: str) -> JobSpec:
    args = build_parser().parse_args(["serve", *words])
    return serve.build_spec(args)


async def form_spec(values: dict[str, str]) -> JobSpec:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(110, 44)) as pilot:
        await pilot.press("4", "n")
        await settle(pilot, lambda: isinstance(app.screen, JobFormScreen))
        form = app.screen
        assert isinstance(form, JobFormScreen)
        form.query_one("#preset", Select).value = "serve a model"
        await pilot.pause()
        form.query_one("#f-target", Select).value = "slurm"
        await pilot.pause()
        for name, value in values.items():
            assert form.query_one(f"#f-{name}").display, name  # the form shows it for a serve on Slurm
            form.query_one(f"#f-{name}", Input).value = value
        await pilot.pause()
        spec, problems = form.read()
        assert spec is not None, problems
        return spec


async def test_serve_target_slurm_builds_the_forms_serve_on_slurm() -> None:
    from_form = await form_spec({**SLURM, "name": "serve demo"})
    from_command = command_spec(
        "demo", "--target", "slurm", "--partition", "debug", "--cards-per-node", "1", "--time-limit", "30",
        "--account", "acct", "--qos", "normal", "--gres-type", "gaudi2",
    )  # fmt: skip
    assert from_command == from_form
    assert from_command.target == "slurm" and from_command.slurm_cards_per_node == 1
    assert command_spec("demo").target == "local"  # the default, as before


def test_ray_and_slurm_settings_without_slurm_are_refused_in_words() -> None:
    with pytest.raises(SpecError, match=f"^--target ray: {LOCAL_OR_SLURM}$"):
        command_spec("demo", "--target", "ray")
    with pytest.raises(SpecError, match="^--partition: a Slurm setting; add --target slurm$"):
        command_spec("demo", "--partition", "debug")
    with pytest.raises(SpecError, match="^--partition, --qos: Slurm settings; add --target slurm$"):
        command_spec("demo", "--partition", "debug", "--qos", "q")
    with pytest.raises(SpecError, match="^--cards: on Slurm the node's cards are Slurm's to choose"):
        command_spec("demo", "--target", "slurm", "--cards", "0")
    with pytest.raises(SpecError, match="^--cards-per-node: 'x' is not a whole number"):
        command_spec("demo", "--target", "slurm", "--cards-per-node", "x")


def test_the_command_says_so_and_starts_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "demo", "--target", "ray"]) == 2
    assert capsys.readouterr().err == f"gaudi-tui serve: --target ray: {LOCAL_OR_SLURM}\n"
    assert runfolder.all_runs() == []
