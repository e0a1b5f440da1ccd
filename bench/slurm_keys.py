"""The Slurm screen's key-to-screen while it holds 10,000 jobs (issue 41, item 4): target ≤ 50 ms.

The panel side: the whole app headless (`App.run_test`, 120×40), the Slurm screen fed through the
real poll path: `core.slurm.poll` (its shared file included, in a home of the bench's own) calls
`Slurm.squeue_fields`, which here prints a generated queue (bench/common/slurm_answers.py: jobs of
one real 22.05.8 moment copied with new ids) with the separator the poll asked for, and `sinfo`,
which answers the recorded 22.05.8 nodes. Every answer changes every job's shown state reason (the
bench's worst case: every row changes), and the screen refreshes every 2 s as it does for a user,
so a key may land while a refresh is being drawn.

The baseline: a bare Textual app with one DataTable (row cursor, zebra stripes, as the screen's)
holding the same 10,000 rows (the screen's own cells of the first answer), nothing refreshing it.

A figure is the time from just before a key is pressed (`Pilot.press`) to the end of the first frame
Textual draws (`Screen._compositor_refresh`) once the table's cursor is on the row the key moves it
to: the screen's own frames, not sleeps. `down` moves one row, `pagedown` a page; after each
PRESSES presses of one key the cursor goes back to the top (untimed). Sides alternate in ROUNDS
rounds, the side going first swapped each round; each side starts untimed once before (imports,
the first answer). Printed: each key's median with min–max per side over every press, and the
ratio of the medians.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
sys.path.insert(0, str(ROOT))
from common.figures import load, spread  # noqa: E402
from common.home import own_home  # noqa: E402
from common.slurm_answers import DATA, Queue  # noqa: E402

JOBS = 10_000
ROUNDS = 4
PRESSES = 6
"""Presses of each key per side per round: ROUNDS × PRESSES = 24 a key and side."""
KEYS = ("down", "pagedown")
START = 95
"""Where each key's presses start: `down` crosses the panel's window of 100 rows (its edge is the
costly case), `pagedown` crosses it at once."""
TARGET_MS = 50.0
SIZE = (120, 40)


class Frames:
    """The end time of each frame Textual draws, with the queue table's cursor row at that frame."""

    def __init__(self) -> None:
        self.table = None  # the DataTable whose cursor is read
        self.frames: list[tuple[float, int]] = []

    def install(self) -> None:
        from textual.screen import Screen

        refresh = Screen._compositor_refresh  # noqa: SLF001 - the frame itself

        def drawn(screen, *args, **kwargs):  # noqa: ANN001, ANN202
            result = refresh(screen, *args, **kwargs)
            if self.table is not None:
                self.frames.append((time.perf_counter(), row_of(self.table)))
            return result

        Screen._compositor_refresh = drawn  # noqa: SLF001

    def first(self, since: float, row: int) -> float | None:
        return next((t for t, r in self.frames if t > since and r == row), None)


FRAMES = Frames()


def row_of(table) -> int:  # noqa: ANN001
    """The cursor's row in the whole list (the panel's table holds a window of it)."""
    from gaudi_tui.ui.widgets.window_table import WindowTable

    return (table.position or 0) if isinstance(table, WindowTable) else table.cursor_row


async def press(pilot, table, key: str) -> float:  # noqa: ANN001
    """Seconds from the key to the end of the first frame with the cursor where the key moved it."""
    before = row_of(table)
    FRAMES.frames.clear()
    start = time.perf_counter()
    await pilot.press(key)
    deadline = start + 10
    while True:
        row = row_of(table)
        if row != before and (at := FRAMES.first(start, row)) is not None:
            return at - start
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{key}: no frame showed the cursor moved")
        await asyncio.sleep(0.002)


async def presses(pilot, table, times: dict[str, list[float]]) -> None:  # noqa: ANN001
    rng = random.Random(41)
    for key in KEYS:
        await pilot.press("ctrl+home")  # untimed: the top, then START rows down
        table.move_cursor(row=START)
        await pilot.pause(0.2)
        for _ in range(PRESSES):
            await asyncio.sleep(rng.uniform(0.05, 0.3))  # at any moment of the 2 s refresh
            times[key].append(await press(pilot, table, key))


class BenchSlurm:
    """`Slurm` whose squeue prints the generated queue (changed at each call) and whose sinfo answers
    the recorded nodes."""

    @staticmethod
    def make(queue: Queue):  # noqa: ANN205
        import json

        from gaudi_tui.core.slurm.cli import Slurm

        nodes = json.loads((DATA / "sinfo.json").read_text())

        class Generated(Slurm):
            def squeue_fields(self, fields: str) -> str:
                sep = fields[len("JobID:0") : fields.index(",")]
                queue.change(1.0, 1.0)
                return queue.text(sep)[0]

            def sinfo(self) -> dict:
                return nodes

        return Generated()


async def panel(times: dict[str, list[float]] | None) -> None:
    """The Slurm screen holding the queue."""
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.ui.app import GaudiApp
    from gaudi_tui.ui.screens.slurm import SlurmScreen
    from gaudi_tui.ui.widgets.window_table import WindowTable

    queue = Queue(JOBS)
    app = GaudiApp(accelerator=Accelerator("cpu", "bench"), hostname="bench")
    async with app.run_test(size=SIZE) as pilot:
        screen = SlurmScreen(slurm=BenchSlurm.make(queue), user="root")
        await app.push_screen(screen)
        deadline = time.monotonic() + 120
        while len(screen.rows) < JOBS:
            if time.monotonic() > deadline:
                raise RuntimeError("the Slurm screen never showed the queue")
            await pilot.pause(0.1)
        table = screen.query_one("#slurm-queue", WindowTable)
        FRAMES.table = table
        if times is not None:
            await presses(pilot, table, times)
        FRAMES.table = None


def first_rows() -> list[tuple[str, ...]]:
    """The baseline's rows: the cells the screen shows for the first answer, in its order."""
    from gaudi_tui.core.slurm import queue_fields, table

    queue = Queue(JOBS)
    queue.change(1.0, 1.0)
    jobs = queue_fields.jobs(*queue.text())
    now = time.time()
    return [table.queue_row(jobs[i], now) for i in table.order(jobs, "root")]


async def bare(rows: list[tuple], times: dict[str, list[float]] | None) -> None:
    from rich.text import Text
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable

    from gaudi_tui.core.slurm import table as slurm_table

    class Bare(App):
        def compose(self) -> ComposeResult:
            grid: DataTable = DataTable(cursor_type="row", zebra_stripes=True)
            grid.add_columns(*slurm_table.QUEUE_COLUMNS)
            for i, row in enumerate(rows):
                grid.add_row(*map(Text, row), key=str(i))
            yield grid

    app = Bare()
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(DataTable)
        FRAMES.table = table
        await pilot.pause(0.5)
        if times is not None:
            await presses(pilot, table, times)
        FRAMES.table = None


async def main() -> int:
    own_home()
    FRAMES.install()
    print(
        f"slurm keys: the Slurm screen holding {JOBS:,} jobs (every row changing each 2 s refresh); {load()}"
    )
    rows = first_rows()
    await panel(None)  # untimed: imports, the first answer
    await bare(rows, None)
    sides = {"panel": lambda t: panel(t), "bare": lambda t: bare(rows, t)}
    times = {side: {key: [] for key in KEYS} for side in sides}
    for turn in range(ROUNDS):
        order = list(sides) if turn % 2 == 0 else list(sides)[::-1]
        for side in order:
            await sides[side](times[side])
    for key in KEYS:
        for side in sides:
            ms = [t * 1000 for t in times[side][key]]
            met = "met" if side != "panel" or statistics.median(ms) <= TARGET_MS else "NOT met"
            target = f"  (target ≤ {TARGET_MS:g} ms: {met})" if side == "panel" else ""
            print(f"  {key:<9} {side:<6} {spread(ms, '{:.1f}')} ms over {len(ms)} presses{target}")
        ratio = statistics.median(times["panel"][key]) / statistics.median(times["bare"][key])
        print(f"  {key:<9} panel ÷ bare {ratio:.2f} (medians)")
    print(f"  at the end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
