"""A row-cursor DataTable that holds a window of a long list (the Slurm queue's 10,000 jobs).

A DataTable holds every row it is given: 10,000 rows cost seconds to add (each cell measured), a
page down walks all of them (~115 ms here), and the rows' cells have to be made for every refresh.
This one holds at most `window` rows of the list, made by `rows(start, stop)` when shown; the cursor
keys move the window when the cursor reaches its edge (down, up, page down, page up, ctrl+home,
ctrl+end), so the keyboard reaches every row. A list no longer than the window is held whole: the
table is then a plain DataTable. Column widths only grow, so the columns stay put as the window
moves. The mouse wheel scrolls within the window. Its cells are drawn again when a column's width
changes (MeasuredTable).

Its cells are drawn by `text_cell.line` where they are one-line Text (all of the screen's are): the
same line DataTable draws through rich's Padding and render_lines, in under half the time (a page
down draws a new page of cells); any other cell is drawn DataTable's way.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from rich.text import Text
from textual._types import SegmentLines

from gaudi_tui.ui.widgets import text_cell
from gaudi_tui.ui.widgets.measured_table import MeasuredTable

Rows = Callable[[int, int], list[tuple[str, tuple[str, ...]]]]
"""(start, stop) → each row's key and cells, for that part of the list. Cells are text as shown:
each becomes a rich Text (never markup)."""

WINDOW = 100


def cell(value: str) -> Text:
    """A cell as the table draws it: never wrapped (a row is one line, and a column is as wide as
    its widest cell), which spares rich the wrapping pass of every cell drawn (~20 % of a cell)."""
    return Text(value, no_wrap=True, overflow="crop", end="")


class WindowTable(MeasuredTable[Text]):
    def __init__(self, *, id: str | None = None, zebra_stripes: bool = False, window: int = WINDOW) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id, cursor_type="row", zebra_stripes=zebra_stripes)
        self.window = window
        self.total = 0
        """Rows in the whole list."""
        self.top = 0
        """The list's place of the window's first row."""
        self._rows: Rows = lambda start, stop: []
        self._keys: list[str] = []
        self._cells: list[tuple[str, ...]] = []

    @property
    def position(self) -> int | None:
        """The cursor's place in the whole list; None when the list is empty."""
        return self.top + self.cursor_row if self.total and self.row_count else None

    def show(self, total: int, rows: Rows, at: int | None = None) -> None:
        """Hold a list of `total` rows, the cursor on its row `at` (where it was if None): rows
        already shown with the same keys have only their changed cells updated."""
        self.total, self._rows = total, rows
        position = self.position
        self._fill(at if at is not None else position if position is not None else 0)

    def _fill(self, at: int) -> None:
        at = max(0, min(at, self.total - 1))
        top = self.top
        if not top <= at < top + self.window:
            top = at - self.window // 2
        top = max(0, min(top, self.total - self.window))
        shown = self._rows(top, min(self.total, top + self.window))
        keys = [key for key, _ in shown]
        if top == self.top and keys == self._keys:
            columns = list(self.columns)
            for key, (_, cells), was in zip(keys, shown, self._cells, strict=True):
                for column, value, old in zip(columns, cells, was, strict=True):
                    if value != old:
                        self.update_cell(key, column, cell(value), update_width=True)
            if at != self.position:
                self.move_cursor(row=at - top)
        else:
            self.clear()
            for key, cells in shown:
                self.add_row(*map(cell, cells), key=key)
            self.top = top
            if shown:
                self.move_cursor(row=at - top)
        self._keys, self._cells = keys, [cells for _, cells in shown]

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - (self.header_height if self.show_header else 0))

    def _beyond(self, at: int) -> bool:
        """Whether the list's row `at` lies outside the window (and inside the list)."""
        return 0 <= at < self.total and not self.top <= at < self.top + self.row_count

    def _move(self, at: int, within: Callable[[], None]) -> None:
        """The cursor to the list's row `at`: the window moved there when it lies outside, else `within`."""
        if self._beyond(at):
            self._fill(at)
        else:
            within()

    def action_cursor_down(self) -> None:
        position = self.position
        self._move(-1 if position is None else position + 1, super().action_cursor_down)

    def action_cursor_up(self) -> None:
        position = self.position
        self._move(-1 if position is None else position - 1, super().action_cursor_up)

    def action_page_down(self) -> None:
        position = self.position
        at = -1 if position is None else min(self.total - 1, position + self._page())
        self._move(at, super().action_page_down)

    def action_page_up(self) -> None:
        position = self.position
        at = -1 if position is None else max(0, position - self._page())
        self._move(at, super().action_page_up)

    def action_scroll_top(self) -> None:
        self._move(0, super().action_scroll_top)

    def action_scroll_bottom(self) -> None:
        self._move(self.total - 1, super().action_scroll_bottom)

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> SegmentLines:
        """DataTable's own, for a one-line Text in a row of height 1 drawn by `text_cell.line`: the
        same cache key, cell, styles and meta as DataTable._render_cell (Textual 8.2.8)."""
        header = row_index == -1
        row_key = self._header_row_key if header else self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if row_key is None or column_key is None:  # a row label (column -1), or no such cell
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        if (self.header_height if header else self.rows[row_key].height) != 1:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        key = (
            row_key,
            column_key,
            base_style,
            cursor,
            hover,
            self._show_hover_cursor,
            self._update_count,
            self._pseudo_class_state,
        )
        lines = self._cell_render_cache.get(key)
        if lines is not None:
            return lines
        value = self._get_row_renderables(row_index).cells[column_index]
        fixed = not header and (row_index < self.fixed_rows or column_index < self.fixed_columns)
        component, post = self._get_styles_to_render_cell(
            header,
            False,
            fixed,
            hover,
            cursor,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority == "css",
            self.cursor_background_priority == "css",
        )
        pre = base_style + Style.from_meta({"row": row_index, "column": column_index}) + component
        line = (
            text_cell.line(self.app.console, value, width, self.cell_padding, pre, post)
            if isinstance(value, Text)
            else None
        )
        if line is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        self._cell_render_cache[key] = [line]
        return [line]
