"""The Fleet screen's host rows as a line-API widget: only the rows on screen are ever rendered, so a
refresh of 512 hosts costs the rows you see, not the fleet (a DataTable lays out every row). A row's
line is kept (by host name) until its row changes: a refresh redraws only the rows that changed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from gaudi_tui.core.fleet.model import Host, HostSummary

COLUMNS = (("host", 21), ("state", 5), ("cards", 32), ("free", 4), ("fits", 4), ("flags", 18))
TOTAL_WIDTH = sum(width + 1 for _, width in COLUMNS)


class Row(NamedTuple):
    host: HostSummary
    cards: Host | None = None
    """The host's per-card values; None while not asked for (the row has not been on screen)."""


Cells = Callable[[Row], Sequence[Text]]


class HostGrid(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"host-grid--header", "host-grid--cursor"}
    DEFAULT_CSS = """
    HostGrid { height: 1fr; }
    HostGrid > .host-grid--header { text-style: bold; color: $text-accent; }
    HostGrid > .host-grid--cursor { background: $block-cursor-blurred-background; }
    HostGrid:focus > .host-grid--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground; text-style: bold;
    }
    """
    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False, id="fleet.up"),
        Binding("down", "move(1)", "Down", show=False, id="fleet.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="fleet.pageup"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="fleet.pagedown"),
        Binding("home", "move(-100000)", "First host", show=False, id="fleet.first"),
        Binding("end", "move(100000)", "Last host", show=False, id="fleet.last"),
        Binding("enter", "select", "Open host", id="fleet.open"),
    ]

    cursor_row: reactive[int] = reactive(0)

    class Selected(Message):
        def __init__(self, row: Row) -> None:
            super().__init__()
            self.row = row

    class Scrolled(Message):
        """Other rows came into view."""

    def __init__(self, cells: Cells, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]  # Widget's id/classes keywords
        self.cells = cells
        self.hosts: list[Row] = []
        self._strips: dict[str, tuple[Row, Strip]] = {}
        self._header: Strip | None = None
        self.virtual_size = Size(TOTAL_WIDTH, 1)

    # -- data ---------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self.hosts)

    @property
    def current(self) -> Row | None:
        return self.hosts[self.cursor_row] if 0 <= self.cursor_row < len(self.hosts) else None

    def row_text(self, row: int) -> list[str]:
        """The plain text of a row's cells (tests, screen readers)."""
        return [cell.plain for cell in self.cells(self.hosts[row])]

    def rows_on_screen(self) -> list[Row]:
        """The rows on screen now (all of them before the first layout)."""
        top = int(self.scroll_offset.y)
        height = self.size.height - 1 if self.size.height else len(self.hosts)
        return self.hosts[top : top + max(height, 1)]

    def show(self, rows: list[Row]) -> None:
        """Replace the rows (keeping the cursor on the same host when it is still there); lines of
        rows that did not change are kept."""
        keep = self.current.host.name if self.current else None
        same_order = len(rows) == len(self.hosts) and all(
            a.host.name == b.host.name for a, b in zip(rows, self.hosts, strict=True)
        )
        self.hosts = rows
        if not same_order:
            self.virtual_size = Size(TOTAL_WIDTH, len(rows) + 1)
            names = [r.host.name for r in rows]
            row = names.index(keep) if keep in names else self.cursor_row
            self.cursor_row = max(0, min(row, len(rows) - 1))
        self.refresh(layout=not same_order)

    def restyle(self) -> None:
        """Drop every kept line (the colouring metric, job size or theme changed)."""
        self._strips.clear()
        self.refresh()

    # -- rendering ----------------------------------------------------------------------------
    def _line(self, cells: Sequence[Text], style: Style | None = None) -> Strip:
        line = Text(no_wrap=True, end="")
        for (_name, width), cell in zip(COLUMNS, cells, strict=True):
            cell = cell.copy()
            cell.truncate(width, overflow="ellipsis", pad=True)
            line.append(" ")
            line.append_text(cell)
        strip = Strip(list(line.render(self.app.console)), line.cell_len)
        return strip.apply_style(style) if style else strip

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        number = y + scroll_y
        if number == 0:
            header = self._header
            if header is None:
                style = self.get_component_rich_style("host-grid--header")
                header = self._header = self._line([Text(name) for name, _ in COLUMNS], style)
            strip = header
        elif number - 1 < len(self.hosts):
            row = number - 1
            data = self.hosts[row]
            cached = self._strips.get(data.host.name)
            if cached is None or cached[0] != data:
                cached = self._strips[data.host.name] = (data, self._line(self.cells(data)))
            strip = cached[1]
            if row == self.cursor_row:
                strip = strip.apply_style(self.get_component_rich_style("host-grid--cursor"))
        else:
            return Strip.blank(self.size.width, self.rich_style)
        return strip.crop_extend(scroll_x, scroll_x + self.size.width, self.rich_style)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._header = None
        self._strips.clear()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if int(old) != int(new):
            self.post_message(self.Scrolled())

    def on_resize(self) -> None:
        self.post_message(self.Scrolled())

    # -- cursor -------------------------------------------------------------------------------
    def watch_cursor_row(self, old: int, new: int) -> None:
        self.refresh()
        self.scroll_to_region(Region(0, new + 1, 1, 1), animate=False, immediate=True)

    def action_move(self, delta: int) -> None:
        if self.hosts:
            self.cursor_row = max(0, min(len(self.hosts) - 1, self.cursor_row + delta))

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(1, self.size.height - 2))

    def action_select(self) -> None:
        if self.current is not None:
            self.post_message(self.Selected(self.current))

    def on_click(self, event: events.Click) -> None:
        row = event.y + self.scroll_offset.y - 1
        if 0 <= row < len(self.hosts):
            if row == self.cursor_row and event.chain == 2:
                self.action_select()
            self.cursor_row = row
