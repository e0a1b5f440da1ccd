"""Pilot tests of the Checklist screen and the Explain pane, on controlled hosts."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from textual.message import Message
from textual.widgets import OptionList, ProgressBar, Static, TextArea

from gaudi_tui.core.doctor.checks import ALL_CHECKS
from gaudi_tui.core.doctor.model import counts
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.checklist import CheckList, ChecklistScreen, CheckRow
from gaudi_tui.ui.screens.explain import ExplainScreen
from tests.conftest import CPU
from tests.doctor.hosts import FakeHolder, gaudi2_snapshot, make_ctx, probe_children

DEVICE_ACQUIRED = "RuntimeError: synStatus=20 [Device already acquired] Device acquire failed."


def quick_host(tmp: Path, **env: str):
    """No habana_frameworks (its checks answer fast), a replayed device map, one busy card."""
    holders = [FakeHolder(3, 4242, "alice", "python train.py")]

    def factory(cancel: threading.Event):
        return make_ctx(tmp, env, fakes=False, snapshot=gaudi2_snapshot(), holders=holders, cancel=cancel)

    return factory


async def open_checklist(pilot, factory) -> ChecklistScreen:
    await pilot.press("2")
    screen = pilot.app.screen
    assert isinstance(screen, ChecklistScreen)
    screen.context_factory = factory
    return screen


async def run_to_end(pilot, screen: ChecklistScreen) -> None:
    await pilot.press("r")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    assert not screen.running


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def test_rows_before_the_first_run(tmp_path: Path) -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_checklist(pilot, quick_host(tmp_path))
        rows = list(screen.query(CheckRow))
        assert [r.check.id for r in rows] == [c.id for c in ALL_CHECKS]
        assert all(r.result is None for r in rows)
        assert text_of(screen, "#checklist-summary").startswith(
            "Checklist — not run yet: r runs the 20 checks"
        )
        assert not screen.query_one(ProgressBar).display


async def test_run_reports_every_check_with_progress_and_a_summary(tmp_path: Path) -> None:
    seen: list[Message] = []
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30), message_hook=seen.append) as pilot:
        screen = await open_checklist(pilot, quick_host(tmp_path))
        await run_to_end(pilot, screen)
        done = [m for m in seen if isinstance(m, ChecklistScreen.CheckDone)]
        assert {m.result.id for m in done} == {c.id for c in ALL_CHECKS}
        assert screen.query_one(ProgressBar).progress == len(ALL_CHECKS)
        tally = counts(screen.results.values())
        summary = text_of(screen, "#checklist-summary")
        assert summary.startswith("Checklist — 20 checks")
        for status, n in tally.items():
            assert f"{n} {status}" in summary
        busy = screen.query_one("#row-cards-busy", CheckRow)
        assert busy.has_class("-warn")
        assert "card 3 (module 7) pid 4242 alice" in str(busy.query_one(".row-finding", Static).render())


async def test_enter_opens_a_row_and_c_copies_its_fix(tmp_path: Path) -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_checklist(pilot, quick_host(tmp_path))
        await run_to_end(pilot, screen)
        rows = screen.query_one(CheckList)
        rows.index = [c.id for c in ALL_CHECKS].index("plugin.importable")
        await pilot.press("enter")
        row = screen.query_one("#row-plugin-importable", CheckRow)
        assert row.has_class("-open")
        detail = str(row.query_one(".row-detail", Static).render())
        assert "Why: Intel's PyTorch plugin" in detail and "Fix: Run inside Intel's Gaudi container" in detail
        await pilot.press("c")
        assert app.clipboard == row.result.fix
        await pilot.press("enter")
        assert not row.has_class("-open")
        rows.index = [c.id for c in ALL_CHECKS].index("accelerate.version")
        await pilot.press("c")
        await pilot.pause()
        assert app.clipboard == row.result.fix
        assert any("no fix to copy" in n.message for n in app._notifications)


async def test_env_fix_toggle_applies_the_fixes_to_launched_jobs(tmp_path: Path) -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_checklist(pilot, quick_host(tmp_path, PT_HPU_LAZY_MODE="1"))
        await run_to_end(pilot, screen)
        assert app.env_fixes == {}
        assert "f applies PT_ENABLE_INT64_SUPPORT=1" in text_of(screen, "#checklist-env")
        await pilot.press("f")
        assert app.env_fixes == {"PT_ENABLE_INT64_SUPPORT": "1"}
        assert text_of(screen, "#checklist-env").startswith("Env fixes ON")
        await pilot.press("f")
        assert app.env_fixes == {}


async def test_r_reruns_and_stale_results_are_ignored(tmp_path: Path) -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_checklist(pilot, quick_host(tmp_path))
        await pilot.press("r", "r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.run_number == 2
        assert set(screen.results) == {c.id for c in ALL_CHECKS}
        assert all(row.result is not None for row in screen.query(CheckRow))


async def test_explain_pasted_text_links_the_related_check(tmp_path: Path) -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_checklist(pilot, quick_host(tmp_path))
        await run_to_end(pilot, screen)
        await pilot.press("e")
        assert isinstance(app.screen, ExplainScreen)
        app.screen.query_one(TextArea).text = f"Traceback (most recent call last):\n{DEVICE_ACQUIRED}\n"
        await pilot.pause()
        shown = text_of(app.screen, "#explain-matches")
        assert shown.startswith("1 known Gaudi error(s) in the pasted text:")
        assert "The card is held by another process" in shown
        assert "line 2: " + DEVICE_ACQUIRED in shown
        assert "Check: cards.busy — ! 2 of 8 card(s) of this host busy" in shown
        await pilot.press("escape")
        assert app.screen is screen


async def test_explain_a_job_log(tmp_path: Path) -> None:
    run = runfolder.runs_dir() / "20261129-101500-demo-fine-tune-1a2b"
    run.mkdir()
    (run / "stdout.log").write_text(f"{{'loss': 5.48}}\n{DEVICE_ACQUIRED}\n")
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("2", "e")
        logs = app.screen.query_one(OptionList)
        assert str(logs.get_option_at_index(0).prompt) == "20261129-101500-demo-fine-tune-1a2b/stdout.log"
        logs.focus()
        logs.highlighted = 0
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        shown = text_of(app.screen, "#explain-matches")
        assert shown.startswith("1 known Gaudi error(s) in 20261129-101500-demo-fine-tune-1a2b/stdout.log:")
        assert "Check: cards.busy — not run yet" in shown


async def test_quitting_during_a_run_leaves_no_child(tmp_path: Path) -> None:
    def hung(cancel: threading.Event):
        return make_ctx(tmp_path, {"FAKE_HPU_IMPORT_SLEEP": "60"}, cancel=cancel)

    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30)) as pilot:
        await open_checklist(pilot, hung)
        await pilot.press("r")
        deadline = time.monotonic() + 20
        while not probe_children() and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert probe_children()
        await pilot.press("q")
    assert app.return_value == 0
    assert probe_children() == []


async def test_works_at_80_by_24(tmp_path: Path) -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_checklist(pilot, quick_host(tmp_path))
        await run_to_end(pilot, screen)
        await pilot.press("down", "enter")
        assert screen.query_one("#row-hlsmi-present", CheckRow).has_class("-open")
        assert screen.query_one(CheckList).region.height >= 10


async def test_the_panel_runs_the_checks_when_the_checklist_opens() -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host", autorun_checks=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("2")
        screen = app.screen
        deadline = time.monotonic() + 60
        while screen.running or not screen.results:
            assert time.monotonic() < deadline, "the checks did not run on open"
            await pilot.pause(0.1)
        assert len(screen.results) == len(ALL_CHECKS)
        assert "not run yet" not in text_of(screen, "#checklist-summary")
