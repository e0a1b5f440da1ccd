"""SVG snapshots of the Checklist with real content: the checks run against a replayed Gaudi 2 host
(tests/doctor/hosts.py::demo_gaudi_host), with the fake habana_frameworks in the child processes."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TextArea

from gaudi_tui.core.doctor.checks import ALL_CHECKS
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.checklist import CheckList
from tests.conftest import CPU
from tests.doctor.hosts import demo_gaudi_host

PASTED = (
    "Traceback (most recent call last):\n"
    '  File "run_lora_clm.py", line 912, in <module>\n'
    "RuntimeError: synStatus=20 [Device already acquired] Device acquire failed.\n"
)


def test_checklist_after_a_run_with_a_row_open(snap_compare, tmp_path: Path) -> None:
    factory = demo_gaudi_host(tmp_path / "site")

    async def run_before(pilot) -> None:
        await pilot.press("2")
        pilot.app.screen.context_factory = factory
        await pilot.press("r")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        pilot.app.screen.query_one(CheckList).index = [c.id for c in ALL_CHECKS].index("cards.busy")
        await pilot.press("enter")

    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


def test_explain_pane_with_a_pasted_error(snap_compare, tmp_path: Path) -> None:
    async def run_before(pilot) -> None:
        await pilot.press("2", "e")
        pilot.app.screen.query_one(TextArea).text = PASTED
        await pilot.pause()

    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)
