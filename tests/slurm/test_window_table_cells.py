"""WindowTable draws its one-line Text cells itself (ui/widgets/text_cell.py) instead of through
rich's Padding and render_lines: each cell's line, and each line of the table, must be the very
segments (text, style, meta) DataTable draws for the same table. The cells are varied: plain, styled
spans (overlapping, empty, the text's own style), wide CJK characters cropped mid-character, an
emoji sequence, U+FFFD, cells longer than their column, empty and styled-empty cells; drawn on the
cursor row, zebra rows, the header, a fixed column and under the mouse's hover, with padding 0, 1
and 2 and either cursor-colour priority. Cells it does not cover (a tab, ellipsis overflow, a
justified label, a wrapped text, a row two lines high, a row label, a non-Text renderable) are drawn
DataTable's way, and still equal."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from rich.console import Console
from rich.panel import Panel
from rich.style import Style
from rich.text import Span, Text
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from gaudi_tui.ui.widgets import text_cell
from gaudi_tui.ui.widgets.window_table import WindowTable, cell
from tests.pilot import settle

BOLD_RED = Style(bold=True, color="red")


def spans(plain: str, *marks: tuple[int, int, str | Style], style: str = "") -> Text:
    text = cell(plain)
    text.style = style
    text.spans[:] = [Span(start, end, mark) for start, end, mark in marks]
    return text


COVERED: list[Text] = [
    cell("R"),
    cell("PENDING (Priority)"),
    spans("bold and red", (0, 4, "bold"), (9, 12, BOLD_RED)),
    spans("overlapping spans", (0, 11, "italic"), (5, 17, "underline on blue"), (8, 8, "bold")),
    spans("own style", (4, 9, "reverse"), style="green"),
    spans("later span first", (6, 16, "red"), (0, 10, "blue")),  # over 6–10 the later one wins
    cell("作业名称很长的"),  # wide: 14 cells, cropped mid-character in a narrow column
    cell("👩‍💻 dev ✓"),
    cell("bad \ufffd byte"),
    cell("a-name-longer-than-its-column-is-wide"),
    spans("cropped span", (2, 12, "bold")),
    cell(""),
    spans("", style="bold"),
    Text("default text"),  # no_wrap None: the row's height 1 decides, as for a header label
]
"""Cells the fast path draws."""

FALLBACK: list[Any] = [
    cell("tab\there"),
    Text("ellipsis overflow", overflow="ellipsis", no_wrap=True),
    Text("right", justify="right"),
    Text("wrapped text", no_wrap=False),
    Panel("not a Text"),
]
"""Cells drawn DataTable's way."""

SPLIT = spans("👩‍💻👩‍💻👩‍💻", (2, 3, "bold"))
"""A span's edge inside an emoji sequence: its parts are wider than the whole (8 cells against 6).
Drawn where its column is wide enough; where it is cropped, rich crops its parts again, and the
fast path leaves it to rich."""

NARROW = 6
"""The fixed width of the columns that crop."""


class Tables(App[None]):
    def __init__(self, padding: int, foreground: Literal["css", "renderable"]) -> None:
        super().__init__()
        self.padding, self.foreground = padding, foreground

    def compose(self) -> ComposeResult:
        for fast in (True, False):
            table = (
                WindowTable(id="fast" if fast else "reference", zebra_stripes=True) if fast else Reference()
            )
            table.cell_padding = self.padding
            table.cursor_foreground_priority = self.foreground
            table.fixed_columns = 1
            table.add_column("[b]Job[/b]")
            table.add_column("Name")
            table.add_column(Text("Narrow", justify="right"), width=NARROW)
            table.add_column("作业", width=NARROW - 1)
            for i, value in enumerate([*COVERED, *FALLBACK, SPLIT]):
                table.add_row(cell(str(i)), value, value, value, key=str(i), label="L" if i == 3 else None)
            table.add_row(cell("tall"), cell("x"), cell("y"), cell("z"), key="tall", height=2)
            yield table


class Reference(WindowTable):
    """The same table drawn wholly DataTable's way."""

    def __init__(self) -> None:
        super().__init__(id="reference", zebra_stripes=True)

    def _render_cell(self, *args: Any, **kwargs: Any) -> Any:
        return DataTable._render_cell(self, *args, **kwargs)


def drawn_by_datatable(table: WindowTable, *args: Any) -> list[list[Any]]:
    """The cell as DataTable._render_cell draws it, its cache emptied before and after."""
    table._cell_render_cache.clear()
    lines = DataTable._render_cell(table, *args)
    table._cell_render_cache.clear()
    return lines


def covered(row: int, column: int) -> bool:
    """Whether the fast path draws this cell: the header's labels but the justified one, the
    COVERED rows, the first column's plain numbers, SPLIT in the wide column; not the two-line row."""
    if row == -1:
        return column != 2
    if row == len(COVERED) + len(FALLBACK):
        return column <= 1
    return row < len(COVERED) or (row < len(COVERED) + len(FALLBACK) and column == 0)


@pytest.mark.parametrize(("padding", "foreground"), [(1, "css"), (0, "renderable"), (2, "css")])
async def test_each_cell_is_drawn_as_datatable_draws_it(
    padding: int, foreground: Literal["css", "renderable"], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = Tables(padding, foreground)
    async with app.run_test(size=(120, 60)) as pilot:
        table = app.query_one("#fast", WindowTable)
        await settle(pilot, lambda: table.row_count == len(COVERED) + len(FALLBACK) + 2, what="the table")
        fallbacks: list[tuple[int, int]] = []
        original = DataTable._render_cell

        def counted(self: DataTable[Any], row: int, column: int, *rest: Any) -> Any:
            fallbacks.append((row, column))
            return original(self, row, column, *rest)

        checked = 0
        for row in range(-1, table.row_count):
            for column, spec in enumerate(table.ordered_columns):
                width = spec.get_render_width(table)
                fixed = table.get_component_styles("datatable--fixed").rich_style
                for base in (table._get_row_style(row, table.rich_style), fixed):
                    for cursor in (False, True):
                        for hover in (False, True):
                            table._show_hover_cursor = hover
                            table._cell_render_cache.clear()
                            fallbacks.clear()
                            monkeypatch.setattr(DataTable, "_render_cell", counted)
                            ours = table._render_cell(row, column, base, width, cursor, hover)
                            monkeypatch.setattr(DataTable, "_render_cell", original)
                            theirs = drawn_by_datatable(table, row, column, base, width, cursor, hover)
                            assert ours == theirs, (row, column, cursor, hover)
                            assert [s.style for s in ours[0]] == [s.style for s in theirs[0]]
                            assert [s.style.meta for s in ours[0] if s.style] == [
                                s.style.meta for s in theirs[0] if s.style
                            ]
                            assert (fallbacks == []) == covered(row, column), (row, column, fallbacks)
                            checked += 1
        assert checked == (table.row_count + 1) * 4 * 8


def lines(table: DataTable[Any]) -> list[list[Any]]:
    """The table's lines as it draws them now (its focus and hover as they are)."""
    table._pseudo_class_state = table.get_pseudo_class_state()  # as render_lines sets it
    return [list(table.render_line(y)) for y in range(table.size.height)]


async def test_the_table_draws_the_lines_datatable_draws() -> None:
    app = Tables(1, "css")
    async with app.run_test(size=(120, 60)) as pilot:
        fast = app.query_one("#fast", WindowTable)
        reference = app.query_one("#reference", Reference)
        total = len(COVERED) + len(FALLBACK) + 2
        await settle(pilot, lambda: fast.row_count == reference.row_count == total, what="the tables")
        for table in (fast, reference):
            table.move_cursor(row=4)
            table._show_hover_cursor = True
            table.hover_coordinate = Coordinate(6, 1)
        await settle(pilot, lambda: fast.cursor_row == reference.cursor_row == 4, what="the cursors")
        assert fast.size == reference.size and fast.size.height > total
        drawn: dict[tuple[str, bool], list[list[Any]]] = {}
        for focused in (fast, reference):  # the header and cursor are drawn otherwise with the focus
            focused.focus()
            await settle(pilot, lambda: focused.has_focus, what="the focus")  # noqa: B023 - awaited here
            for table in (fast, reference):
                drawn[table.id or "", table is focused] = lines(table)
        for focus in (True, False):
            ours, theirs = drawn["fast", focus], drawn["reference", focus]
            assert ours == theirs, focus
            metas = [[s.style.meta for s in line if s.style] for line in ours]
            assert metas == [[s.style.meta for s in line if s.style] for line in theirs]
            assert any("out_of_bounds" in meta for line in metas for meta in line)  # the row's rest


def test_a_null_style_under_the_text_is_left_to_rich() -> None:
    """Under a null `pre` rich keeps the text's None apart from the padding's null style: not the
    fast path's (a table's `pre` always carries its cell's place)."""
    console, text = Console(), cell("x")
    assert text_cell.line(console, text, 5, 1, Style.null(), Style.null()) is None
    assert text_cell.line(console, text, 5, 1, Style.from_meta({"row": 0}), Style.null()) is not None
