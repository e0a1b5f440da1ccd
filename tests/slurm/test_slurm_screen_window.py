"""The Slurm screen holding a long queue: its table holds a window of the listed jobs (WindowTable),
the keys reach every job, and the row under the cursor is the job `selected()` gives. The queue is
the real 22.05.8 answer squeue_fields.txt, its 19 jobs copied with new ids to 1,000 (as
bench/common/slurm_answers.py does for 10,000), read through the poll's text form."""

from __future__ import annotations

import json
import time
from pathlib import Path

from textual.pilot import Pilot

from gaudi_tui.core.slurm import model, poll, queue_fields, table
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.slurm import SlurmScreen, SlurmView
from gaudi_tui.ui.widgets.window_table import WINDOW, WindowTable
from tests.conftest import CPU
from tests.pilot import settle

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
SEP = "|5eb2a0c4d19f7e38|"
"""The separator squeue_fields.txt was printed with."""
JOBS = 1000


def answer(jobs: int = JOBS) -> queue_fields.Answer:
    """The recorded jobs copied with new ids (1000, 1001, …) to `jobs` jobs."""
    lines = (DATA / "squeue_fields.txt").read_text().split(f"{SEP}\n")[:-1]
    copies = [line.split(SEP, 1)[1] for line in lines]
    sep = queue_fields.separator()
    text = "".join(f"{1000 + i}{sep}{copies[i % len(copies)].replace(SEP, sep)}{sep}\n" for i in range(jobs))
    return queue_fields.Answer(text, sep)


def view_of(read: queue_fields.Answer) -> SlurmView:
    nodes = tuple(model.nodes_from_json(json.loads((DATA / "sinfo.json").read_text())))
    now = time.time()
    return SlurmView(poll.Snapshot(now, read.jobs(), answer=read), nodes, None, now)


def under_cursor(grid: WindowTable) -> tuple[str, ...]:
    return tuple(str(c) for c in grid.get_row_at(grid.cursor_row))


async def shown(pilot: Pilot, screen: SlurmScreen) -> WindowTable:
    await settle(pilot, lambda: len(screen.rows) == JOBS, 20, "the long queue")
    return screen.query_one("#slurm-queue", WindowTable)


async def test_the_keys_reach_every_job_of_a_long_queue_through_a_window() -> None:
    view = view_of(answer())
    screen = SlurmScreen(loader=lambda: view, user="root", interval=3600)
    app = GaudiApp(accelerator=CPU, hostname="login-1")
    async with app.run_test(size=(120, 30)) as pilot:
        await app.push_screen(screen)
        grid = await shown(pilot, screen)
        assert grid.row_count == WINDOW < JOBS and grid.total == JOBS
        listed = [view.snapshot.jobs[i] for i in table.order(view.snapshot.jobs, "root")]
        assert list(screen.rows) == listed  # active first, then by id: as the whole list was
        moves = (
            [("down", 1)] * (WINDOW + 3)
            + [("up", -1)] * 5
            + [("pagedown", None)] * 4
            + [("pageup", None)] * 2
        )
        at = 0
        for key, step in moves:
            await pilot.press(key)
            if step is not None:
                at += step
                assert grid.position == at, key
            else:
                at = grid.position or 0
            job = screen.selected()
            assert job is not None and job == listed[at]
            assert under_cursor(grid) == table.queue_row(job, view.now)  # the row shown is that job's
        assert grid.top > 0 and at > WINDOW  # the window moved
        await pilot.press("ctrl+end")
        assert grid.position == JOBS - 1 and screen.selected() == listed[-1]
        assert under_cursor(grid) == table.queue_row(listed[-1], view.now) and grid.row_count == WINDOW
        await pilot.press("ctrl+home")
        assert grid.position == 0 and grid.top == 0 and screen.selected() == listed[0]


async def test_a_refresh_keeps_the_selected_job_where_its_place_moved() -> None:
    """A job far down is selected; the next answer drops the first ten listed jobs: the cursor
    follows the selected job to its new place, the window with it."""
    first = answer()
    current = [view_of(first)]
    screen = SlurmScreen(loader=lambda: current[0], user="root", interval=3600)
    app = GaudiApp(accelerator=CPU, hostname="login-1")
    async with app.run_test(size=(120, 30)) as pilot:
        await app.push_screen(screen)
        grid = await shown(pilot, screen)
        for _ in range(8):
            await pilot.press("pagedown")
        chosen = screen.selected()
        assert chosen is not None and (grid.position or 0) > WINDOW
        gone = {j.job_id for j in list(screen.rows)[:10]}
        lines = first.text.split(f"{first.sep}\n")[:-1]
        kept = [line for line in lines if int(line.split(first.sep, 1)[0]) not in gone]
        later = queue_fields.Answer("".join(f"{line}{first.sep}\n" for line in kept), first.sep)
        current[0] = view_of(later)
        screen.action_refresh_now()
        await settle(pilot, lambda: len(screen.rows) == JOBS - 10, 20, "the later answer")
        assert screen.selected() == chosen and under_cursor(grid) == table.queue_row(chosen, current[0].now)
