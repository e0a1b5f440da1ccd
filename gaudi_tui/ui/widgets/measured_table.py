"""A DataTable whose cells are drawn again when its columns' widths change.

DataTable measures new and updated cells when it is idle, and keys its caches of drawn cells and
lines without the columns' widths. A frame drawn between adding rows and that measure (a busy host
draws one) kept its cells, cropped to each column's label, until some cell changed: a quiet Slurm
queue showed "run_" for "run_n1_8" for good, and a Fleet host's cards their first frame's crop.
Here the drawn cells are dropped whenever the measure changed a width.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

Cell = TypeVar("Cell")


class MeasuredTable(DataTable[Cell]):
    _widths: tuple[int, ...] = ()
    """The widths (the row labels' first) that the cached cells and lines were drawn at."""

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        super()._update_dimensions(new_rows)
        widths = (self._row_label_column_width, *(c.get_render_width(self) for c in self.ordered_columns))
        if widths != self._widths:
            self._widths = widths
            self._clear_caches()
            self.refresh()
