"""A table whose rows were drawn before it measured them (a busy host draws a frame between adding
rows and the table's idle, where DataTable measures them): once measured, its cells are drawn at
the columns' new widths (ui/widgets/measured_table.py). DataTable keys its drawn cells and lines
without the widths, and before the fix such a frame's cells, cropped to each column's label, stayed
until a cell changed: a quiet Slurm queue showed "run_" for "run_n1_8" for good (caught by the Slurm
snapshot test under load; drawn here in that gap on purpose, so it needs no load)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rich.text import Text
from textual.app import App, ComposeResult

from gaudi_tui.ui.widgets.measured_table import MeasuredTable
from gaudi_tui.ui.widgets.window_table import WindowTable
from tests.pilot import settle
from tests.slurm.test_window_table_cells import lines

NAMES = ("run_n1_8", "pend_gres8", "timeout1m")
GROWN = ("run_n1_8_with_a_longer_name", *NAMES[1:])
"""A refresh: one name grew."""


class Queue(App[None]):
    CSS = "#queue { height: 1fr; }"  # as the Slurm screen's: rows added never resize the table

    def __init__(self, table: MeasuredTable[Text]) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        yield self.table


def drawn(table: MeasuredTable[Text]) -> str:
    return "\n".join("".join(s.text for s in line) for line in lines(table))


def window(table: MeasuredTable[Text], names: tuple[str, ...]) -> None:
    assert isinstance(table, WindowTable)
    table.show(len(names), lambda start, stop: [(str(i), (str(i), names[i])) for i in range(start, stop)], 0)


def plain(table: MeasuredTable[Text], names: tuple[str, ...]) -> None:
    """As the Slurm nodes' and a Fleet host's tables are drawn: cleared and filled again."""
    table.clear()
    for i, name in enumerate(names):
        table.add_row(Text(str(i)), Text(name), key=str(i))


@pytest.mark.parametrize(
    ("make", "fill"),
    [(lambda: WindowTable(id="queue"), window), (lambda: MeasuredTable(id="queue"), plain)],
    ids=["window", "plain"],
)
async def test_cells_drawn_before_the_table_measured_them_are_drawn_again_at_the_new_widths(
    make: Callable[[], MeasuredTable[Text]], fill: Callable[[MeasuredTable[Text], tuple[str, ...]], None]
) -> None:
    table = make()
    app = Queue(table)
    async with app.run_test(size=(80, 12)) as pilot:
        table.add_columns("job", "name")
        await settle(pilot, lambda: table.size.height == 12, what="the table's layout")
        fill(table, NAMES)
        early = drawn(table)  # the frame a busy host draws before the table's idle
        assert "run_n1_8" not in early and "run_" in early, early  # cropped to "name"'s width
        await settle(pilot, lambda: all(name in drawn(table) for name in NAMES), what="the measured names")
        fill(table, GROWN)
        assert GROWN[0] not in drawn(table)
        await settle(pilot, lambda: GROWN[0] in drawn(table), what="the grown name")
