"""The Slurm screen (key 6): recorded 22.05 outputs for the snapshot and the keys, and jobs
submitted with plain sbatch on the real cluster for tail and cancel."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, OptionList, Static

from gaudi_tui.core.slurm import poll, table
from gaudi_tui.core.slurm.cli import Slurm
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.slurm import SignalDialog, SlurmScreen
from tests.conftest import CPU
from tests.slurm.cluster import SlurmTestCluster
from tests.slurm.recorded import recorded_screen, recorded_view

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"


def recorded() -> SlurmScreen:
    return recorded_screen()


async def loaded(pilot: Pilot, screen: SlurmScreen) -> None:
    """Until the screen has drawn its queue and its footer shows the screen's keys. The pilot starts
    before the app's first frame, and the footer composes its keys only after that frame: on a busy
    machine the queue can be drawn while the footer is still empty."""
    deadline = time.monotonic() + 20
    while screen.view is None or not screen.rows or not keys_shown(screen):
        assert time.monotonic() < deadline, "the Slurm screen never loaded"
        await pilot.pause(0.05)
    await pilot.pause()


def keys_shown(screen: SlurmScreen) -> bool:
    shown = {b.key for _node, b, _enabled, _tip in screen.active_bindings.values() if b.show}
    return {getattr(key, "key", None) for key in screen.query("FooterKey")} >= shown


def column(screen: SlurmScreen, name: str) -> list[str]:
    grid = screen.query_one("#slurm-queue", DataTable)
    index = [str(c.label) for c in grid.columns.values()].index(name)
    return [str(grid.get_row_at(i)[index]) for i in range(grid.row_count)]


def test_slurm_snapshot(snap_compare) -> None:  # noqa: ANN001
    async def show(pilot: Pilot) -> None:
        screen = recorded()
        await pilot.app.push_screen(screen)
        await loaded(pilot, screen)
        # what the snapshot means: every job's whole name on the screen, as the table holds them now
        # (a refresh may fill the table again meanwhile: its names are read at each look)
        deadline = time.monotonic() + 30
        while not all(name in pilot.app.export_screenshot() for name in column(screen, "name")):
            assert time.monotonic() < deadline, (
                f"the queue's names were never drawn whole: {column(screen, 'name')}"
            )
            await pilot.pause(0.1)

    app = GaudiApp(accelerator=CPU, hostname="login-1")
    assert snap_compare(app, terminal_size=(120, 30), run_before=show)


async def test_recorded_queue_mine_and_all() -> None:
    app = GaudiApp(accelerator=CPU, hostname="login-1")
    async with app.run_test(size=(120, 30)) as pilot:
        screen = recorded()
        await app.push_screen(screen)
        await loaded(pilot, screen)
        assert column(screen, "job")[:6] == ["4", "5", "6", "7", "8", "9"]  # active first
        why = dict(zip(column(screen, "job"), column(screen, "why"), strict=True))
        assert why["7"] == "waiting for 8 free cards on partition main"
        assert why["2"] == "exit 3"
        assert column(screen, "left")[2] == "0s" and column(screen, "cards")[0] == "1×8"
        status = str(screen.query_one("#slurm-status", Static).render())
        assert "root's jobs: 9" in status and "8/16 cards free" in status and "1 drained/down" in status
        screen.user = "nobody"
        await pilot.press("a")
        assert len(screen.rows) == 9  # everyone's
        await pilot.press("a")
        assert screen.rows == []


async def test_a_refresh_of_the_same_jobs_updates_only_their_changed_cells() -> None:
    """The same jobs again (a reason and the elapsed times new): cells updated in place, the table
    not cleared, the cursor kept; a job gone: the table filled again. Each time the table shows
    exactly what `table.queue_row` says."""
    first = recorded_view()
    jobs = [replace(j, reason="Dependency") if j.job_id == 7 else j for j in first.snapshot.jobs]
    later = replace(first, snapshot=poll.Snapshot(first.now + 60, tuple(jobs)), now=first.now + 60)
    fewer = replace(later, snapshot=poll.Snapshot(later.now, tuple(jobs[1:])))
    current = [first]
    screen = SlurmScreen(loader=lambda: current[0], user="root")
    app = GaudiApp(accelerator=CPU, hostname="login-1")
    async with app.run_test(size=(120, 30)) as pilot:
        await app.push_screen(screen)
        await loaded(pilot, screen)
        grid = screen.query_one("#slurm-queue", DataTable)
        clears: list[int] = []
        clear = grid.clear

        def counted(columns: bool = False) -> DataTable[str]:
            clears.append(1)
            return clear(columns)

        grid.clear = counted  # type: ignore[method-assign]
        grid.move_cursor(row=3)
        await pilot.pause()
        chosen = screen.selected()
        assert chosen is not None and chosen.job_id != jobs[0].job_id  # not the job that goes
        before = dict(zip(column(screen, "job"), column(screen, "why"), strict=True))["7"]
        for view, cleared in ((later, 0), (fewer, 1)):
            current[0] = view
            screen.action_refresh_now()
            deadline = time.monotonic() + 20
            while screen.view is not view:
                assert time.monotonic() < deadline, "the refresh never came"
                await pilot.pause(0.05)
            await pilot.pause()
            shown = [tuple(str(c) for c in grid.get_row_at(i)) for i in range(grid.row_count)]
            assert shown == [table.queue_row(j, view.now) for j in screen.rows]
            assert len(clears) == cleared
        after = dict(zip(column(screen, "job"), column(screen, "why"), strict=True))["7"]
        still = screen.selected()
        assert after != before and still is not None and still.job_id == chosen.job_id


async def test_tail_and_cancel_a_plain_sbatch_job(slurm: SlurmTestCluster) -> None:
    out = slurm.root / "out"
    job_id = slurm.sbatch(
        "-J", "tailme", "-o", f"{out}/tail-%j.out", "--wrap", "echo line-one; echo line-two; sleep 120"
    )
    client = Slurm(env=slurm.env)
    app = GaudiApp(accelerator=CPU, hostname="login-1")
    async with app.run_test(size=(120, 30)) as pilot:
        screen = SlurmScreen(slurm=client, interval=0.5, user="root")
        await app.push_screen(screen)
        deadline = time.monotonic() + 20
        while not any(j.job_id == job_id and j.state == "RUNNING" for j in screen.rows):
            assert time.monotonic() < deadline, "the job never showed as running"
            await pilot.pause(0.1)
        screen.query_one("#slurm-queue", DataTable).move_cursor(
            row=[j.job_id for j in screen.rows].index(job_id)
        )
        await pilot.press("t")
        pane = screen.query_one("#slurm-tail", Static)
        while "line-two" not in str(pane.render()):
            assert time.monotonic() < deadline + 10, str(pane.render())
            await pilot.pause(0.1)
        await pilot.press("c")
        assert isinstance(app.screen, SignalDialog)
        app.screen.query_one(OptionList).highlighted = 0  # plain cancel
        await pilot.press("enter")
        while client.show_job(job_id) and "JobState=CANCELLED" not in (client.show_job(job_id) or ""):
            assert time.monotonic() < deadline + 30, client.show_job(job_id)
            await pilot.pause(0.2)


async def test_the_job_form_sends_a_slurm_job_or_says_why_not(slurm: SlurmTestCluster) -> None:
    """n on Training, target slurm: a request no node can hold is refused in the form with the
    reason, nothing queued; 2 nodes × 1 rank is queued and shows in the Slurm screen's queue."""
    from textual.widgets import Input, Select

    from gaudi_tui.core.jobs import control, runfolder
    from gaudi_tui.ui.screens.job_form import JobFormScreen
    from gaudi_tui.ui.screens.training import TrainingScreen

    app = GaudiApp(accelerator=CPU, hostname="login-1")
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("4", "n")
        form = app.screen
        assert isinstance(form, JobFormScreen)
        form.query_one("#f-target", Select).value = "slurm"
        form.query_one("#f-device", Select).value = "hpu"
        form.query_one("#f-slurm_nodes", Input).value = "3"
        await pilot.press("ctrl+s")
        problems = form.query_one("#form-problems", Static)
        deadline = time.monotonic() + 30
        while "can never run" not in str(problems.render()):
            assert time.monotonic() < deadline, str(problems.render())
            await pilot.pause(0.1)
        assert "3 node(s) with 8 cards each asked, partition main has 2" in str(problems.render())
        assert runfolder.all_runs() == []
        form.query_one("#f-device", Select).value = "cpu"
        form.query_one("#f-slurm_nodes", Input).value = "2"
        form.query_one("#f-slurm_cards_per_node", Input).value = "1"
        form.query_one("#f-max_steps", Input).value = "400"
        await pilot.press("ctrl+s")
        while not isinstance(app.screen, TrainingScreen):
            assert time.monotonic() < deadline + 30, str(problems.render())
            await pilot.pause(0.1)
        (run,) = runfolder.all_runs()
        await pilot.press("6")
        screen = app.screen
        assert isinstance(screen, SlurmScreen)
        while not any(j.name.startswith(f"gaudi-tui-{run.id}") for j in screen.rows):
            assert time.monotonic() < deadline + 60, "the panel's job never showed in the queue"
            await pilot.pause(0.2)
        control.kill(run)


async def test_the_slurm_screen_works_at_80_by_24() -> None:
    app = GaudiApp(accelerator=CPU, hostname="login-1")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = recorded()
        await app.push_screen(screen)
        await loaded(pilot, screen)
        queue = screen.query_one("#slurm-queue", DataTable)
        assert queue.row_count == 9 and queue.size.height >= 5  # the queue keeps room for rows
        await pilot.press("down", "down", "down")
        assert screen.selected() is not None and screen.selected().job_id == 7  # type: ignore[union-attr]
        await pilot.press("c")
        assert isinstance(app.screen, SignalDialog)
        assert "pending: only a plain cancel works" in str(
            app.screen.query_one(".dialog-hint", Static).render()
        )
        await pilot.press("escape")
        assert app.screen is screen


async def test_names_and_reasons_are_shown_as_text_not_markup() -> None:
    """A job's name is anyone's text and a node's reason an admin's: `[/oops]` is a markup error
    for a table that reads its cells as markup (the panel stopped), `[bold]` a style."""
    first = recorded_view()
    odd = "[/oops] [bold]x[/bold] [link=https://example.com]y[/link]"
    jobs = tuple(replace(j, name=odd) if j.job_id == 7 else j for j in first.snapshot.jobs)
    nodes = tuple(replace(n, reason=odd) for n in first.nodes)
    view = replace(first, snapshot=poll.Snapshot(first.now, jobs), nodes=nodes)
    screen = SlurmScreen(loader=lambda: view, user="root")
    app = GaudiApp(accelerator=CPU, hostname="login-1")
    async with app.run_test(size=(160, 30)) as pilot:
        await app.push_screen(screen)
        await loaded(pilot, screen)
        await pilot.pause()
        grid = screen.query_one("#slurm-queue", DataTable)
        row = grid.get_row_at([j.job_id for j in screen.rows].index(7))
        assert isinstance(row[1], Text) and row[1].plain == odd and not row[1].spans  # drawn as it is
        cells = screen.query_one("#slurm-nodes", DataTable).get_row_at(0)
        assert isinstance(cells[-1], Text) and cells[-1].plain == odd and not cells[-1].spans
