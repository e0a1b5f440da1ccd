"""The device map: one row per card with values, colour thresholds and 5-minute sparklines."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from gaudi_tui.core.devices.history import History
from gaudi_tui.core.devices.links import column as links_column
from gaudi_tui.core.devices.model import CardLinks, Device
from gaudi_tui.core.devices.usage import CardUse
from gaudi_tui.ui.palette import Palette, palette
from gaudi_tui.ui.widgets.sparkline_text import spark

SPARK = 5
"""Sparkline characters per table cell: 5 minutes of history, one minute per character."""
TEMP_WARN, TEMP_HOT = 75.0, 90.0
"""°C; Intel publishes no slowdown threshold for hl-smi to compare with, so these are gaudi-tui's."""
POWER_WARN = 0.9
COLUMNS = (  # key, label, width: fixed, so the map does not jump as values change
    ("sel", " ", 1),
    ("idx", "Idx", 3),
    ("mod", "Mod", 3),
    ("card", "Card", 8),
    ("util", "Util", 4 + 1 + SPARK),
    ("hbm", "HBM rsvd", 8 + 1 + SPARK),
    ("power", "Power", 8 + 1 + SPARK),
    ("temp", "Temp", 5),
    ("ecc", "ECC", 3),
    ("links", "Link", 5),
    ("holder", "Holder", 25),
    ("numa", "NUMA", 4),
    ("bus", "Bus", 12),
)

Column = tuple[str, str, int]
FULL_WIDTH = {key: width for key, _, width in COLUMNS}
TOTAL_WIDTH = sum(width + 2 for _, _, width in COLUMNS)
GIVE_WAY = (("card", 0), ("bus", 0), ("numa", 0), ("holder", 20), ("util", 4), ("hbm", 8), ("power", 8))
"""Narrower than the full map, in this order: the product name, Bus and NUMA go (all three stay in
the detail pane), Holder narrows to 20, then the sparklines go (each column keeps its value), so the live
values, Link and Holder stay visible: 100 columns keep the sparklines, 80 columns keep Holder."""


def columns_for(width: int) -> tuple[Column, ...]:
    """The widest layout that fits `width` cells; the narrowest when none does (then it scrolls)."""
    columns = list(COLUMNS)
    for key, narrow in GIVE_WAY:
        if sum(w + 2 for _, _, w in columns) <= width:
            break
        at = next(i for i, (k, _, _) in enumerate(columns) if k == key)
        if narrow:
            columns[at] = (key, columns[at][1], narrow)
        else:
            del columns[at]
    return tuple(columns)


CELL_CACHE = 2000
"""Rendered cells kept (8 cards × 12 columns, many values each); cleared when full."""


def _num(value: float | int | None, fmt: str = "{:.0f}") -> str:
    return "–" if value is None else fmt.format(value)


def _gib(mib: int | None) -> str:
    if mib is None:
        return "–"
    return f"{mib / 1024:.1f}" if mib < 10 * 1024 else f"{mib / 1024:.0f}"


def temperature_style(celsius: float | None, colours: Palette) -> str:
    if celsius is None:
        return ""
    return colours.error if celsius >= TEMP_HOT else colours.warning if celsius >= TEMP_WARN else ""


def power_style(device: Device, colours: Palette) -> str:
    if device.power_draw_w is None or not device.power_cap_w:
        return ""
    share = device.power_draw_w / device.power_cap_w
    return colours.error if share >= 1.0 else colours.warning if share >= POWER_WARN else ""


def links_style(links: CardLinks | None, colours: Palette) -> str:
    """Error when a scale-out (external) port is down, warning when only others are (scale-up, or
    of a type `-n ports` did not tell)."""
    if links is None:
        return ""
    return colours.error if links.external_down else colours.warning if links.down else ""


def sparks(device: Device, history: History) -> tuple[str, str, str]:
    """The row's three sparklines (utilization, HBM, power)."""
    window = history.size
    return (
        spark(history.series(device.index, "utilization"), SPARK, window, 100),
        spark(history.series(device.index, "memory"), SPARK, window, device.memory_total_mib),
        spark(history.series(device.index, "power"), SPARK, window, device.power_cap_w),
    )


def row_cells(
    device: Device,
    use: CardUse | None,
    lines: tuple[str, str, str],
    chosen: bool,
    colours: Palette,
    links: CardLinks | None,
) -> tuple[Text, ...]:
    util_spark, hbm_spark, power_spark = lines
    busy = use is not None and use.busy
    holder_style = colours.warning if use is not None and use.state == "busy-hidden" else ""
    errors = device.uncorrected_errors
    return (
        Text("✓" if chosen else " ", style="bold"),
        Text(str(device.index), justify="right"),
        Text(_num(device.module_id), justify="right"),
        Text(device.product or device.name or "?"),
        Text(
            f"{_num(device.utilization_pct):>3}% {util_spark}",
            style=colours.success if (device.utilization_pct or 0) >= 50 else "",
        ),
        Text(
            f"{_gib(device.memory_used_mib) + '/' + _gib(device.memory_total_mib) + 'G':>8} {hbm_spark}",
            style="bold" if busy else "",
        ),
        Text(
            f"{_num(device.power_draw_w) + '/' + _num(device.power_cap_w) + 'W':>8} {power_spark}",
            style=power_style(device, colours),
        ),
        Text(f"{_num(device.temperature_c)}°C", style=temperature_style(device.temperature_c, colours)),
        Text(_num(errors), style=colours.error if errors else ""),
        Text(links_column(links), style=links_style(links, colours), justify="right"),
        Text(use.label() if use else "—", style=holder_style),
        Text(_num(device.numa_node)),
        Text(device.bus_id or "–"),
    )


class DeviceTable(ScrollView, can_focus=True):
    """The map as a line-API widget: each row is rendered once into a Strip and kept until its
    values change, so a refresh costs a few changed rows, not the whole table (a DataTable
    re-renders every cell on any update)."""

    COMPONENT_CLASSES = {"device-table--header", "device-table--cursor"}
    DEFAULT_CSS = """
    DeviceTable { height: auto; max-height: 12; }
    DeviceTable > .device-table--header { text-style: bold; color: $text-accent; }
    DeviceTable > .device-table--cursor { background: $block-cursor-blurred-background; }
    DeviceTable:focus > .device-table--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground; text-style: bold;
    }
    """
    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False, id="devices.up"),
        Binding("down", "move(1)", "Down", show=False, id="devices.down"),
        Binding("home", "move(-1000)", "First card", show=False, id="devices.first"),
        Binding("end", "move(1000)", "Last card", show=False, id="devices.last"),
    ]

    cursor_row: reactive[int] = reactive(0)

    class RowHighlighted(Message):
        """The cursor moved to another card."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]  # ScrollView's keyword arguments, passed through
        self._order: list[int] = []
        self._cells: dict[int, tuple[Text, ...]] = {}
        self._inputs: dict[int, tuple[object, ...]] = {}
        """What each row's cells were made from: the same inputs make no new Text, no redraw."""
        self._signatures: dict[int, tuple[str, ...]] = {}
        self._strips: dict[int, Strip] = {}
        self._labels = {key: label for key, label, _ in COLUMNS}
        self._header: Strip | None = None
        self._style: Style | None = None
        self._cursor_style: Style | None = None
        self._width = 0
        self._columns: tuple[Column, ...] = COLUMNS
        self._cell_segments: dict[tuple[object, ...], list[Segment]] = {}
        self.virtual_size = Size(TOTAL_WIDTH, 1)

    # -- data ---------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def current_index(self) -> int | None:
        """The card index under the cursor."""
        return self._order[self.cursor_row] if 0 <= self.cursor_row < len(self._order) else None

    def cell_text(self, row: int, column: str) -> str:
        keys = [key for key, _, _ in COLUMNS]
        return self._cells[self._order[row]][keys.index(column)].plain

    def label_sort(self, column: str | None, arrow: str) -> None:
        """Mark the sort column's header (e.g. `Util ▼`)."""
        self._labels = {key: f"{label} {arrow}" if key == column else label for key, label, _ in COLUMNS}
        self._header = None
        self.refresh()

    def show(
        self,
        devices: Sequence[Device],
        uses: Mapping[int, CardUse],
        history: History,
        chosen_modules: Collection[int],
        links: Mapping[int, CardLinks] | None = None,
    ) -> None:
        keep = self.current_index
        order = [d.index for d in devices]
        changed: list[int] = []  # rows whose cells changed
        colours = palette(self.app)
        for row, device in enumerate(devices):
            use = uses.get(device.index)
            card_links = (links or {}).get(device.index)
            inputs = (
                device,
                use,
                sparks(device, history),
                device.module_id in chosen_modules,
                colours,
                card_links,
            )
            if inputs == self._inputs.get(device.index):
                continue
            self._inputs[device.index] = inputs
            cells = row_cells(*inputs)
            signature = _signature(cells)
            if signature != self._signatures.get(device.index):
                self._cells[device.index], self._signatures[device.index] = cells, signature
                self._strips.pop(device.index, None)
                changed.append(row)
        if order != self._order:
            self._order = order
            self.virtual_size = Size(self.virtual_size.width, len(order) + 1)
            self.refresh(layout=True)
            if keep in order:
                self.cursor_row = order.index(keep)
            self.cursor_row = min(self.cursor_row, max(0, len(order) - 1))
            self.refresh()
        elif changed:  # only the rows that changed are drawn again (line 0 is the header), in one call
            self.refresh_rows(changed)

    def refresh_rows(self, rows: Sequence[int]) -> None:
        """Mark these rows' lines dirty in one refresh (a refresh call a line cost 8 on a busy host)."""
        top, width = self.scroll_offset.y, max(self.virtual_size.width, self.size.width)
        self.refresh(*(Region(0, row + 1 - top, width, 1) for row in rows))

    # -- rendering ------------------------------------------------------------------------------
    def _line(self, cells: Sequence[Text], style: Style | None = None) -> Strip:
        segments: list[Segment] = []
        by_key = {key: cell for (key, _, _), cell in zip(COLUMNS, cells, strict=True)}
        for key, _label, width in self._columns:
            segments += self._cell(by_key[key], width, narrowed=width < FULL_WIDTH[key])
        strip = Strip(segments, sum(width + 2 for _, _, width in self._columns))
        # Always a style under every segment: Textual's NO_COLOR filter fails on a segment without one.
        return strip.apply_style(style or self._base_style)

    def _cell(self, cell: Text, width: int, narrowed: bool = False) -> list[Segment]:
        """One cell with its margins, rendered once per distinct content: most cells of a refresh
        (index, module, name, holder) are the same as last time, so only the changed ones render.
        `narrowed`: a sparkline column without its sparkline, cropped rather than ellipsised."""
        key = (width, narrowed, cell.plain, cell.style, cell.justify, tuple(cell.spans))
        hit = self._cell_segments.get(key)
        if hit is None:
            if len(self._cell_segments) > CELL_CACHE:
                self._cell_segments.clear()
            length = cell.cell_len
            if length > width:
                cell = cell.copy()
                cell.truncate(width, overflow="crop" if narrowed else "ellipsis")
                length = cell.cell_len
            pad = width - length
            left = pad if cell.justify == "right" else 0
            hit = self._cell_segments[key] = cell_segments(
                cell, " " * (1 + left), " " * (1 + pad - left), self.app.console
            )
        return hit

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self._width
        number = y + scroll_y
        if number == 0:
            if self._header is None:
                style = self.get_component_rich_style("device-table--header")
                self._header = self._line([Text(self._labels[k]) for k, _, _ in COLUMNS], style)
            strip = self._header
        elif number - 1 < len(self._order):
            index = self._order[number - 1]
            cached = self._strips.get(index)
            if cached is None:
                cached = self._strips[index] = self._line(self._cells[index])
            strip = cached
            if number - 1 == self.cursor_row:  # over the row's own styles, as a DataTable's cursor
                strip = Strip(Segment.apply_style(strip, post_style=self._cursor), strip.cell_length)
        else:
            return Strip.blank(width, self._base_style)
        return strip.crop_extend(scroll_x, scroll_x + width, self._base_style)

    def render_lines(self, crop: Region) -> list[Strip]:
        # `size` once a pass, not once a line: it asks the screen's map for this widget's region.
        self._width = self.size.width
        return super().render_lines(crop)

    def on_resize(self) -> None:
        columns = columns_for(self.size.width)
        if columns != self._columns:
            self._columns = columns
            self.virtual_size = Size(sum(w + 2 for _, _, w in columns), self.virtual_size.height)
            self._header = None
            self._strips.clear()
            self.refresh()

    @property
    def _base_style(self) -> Style:
        """`rich_style`, kept until the styles change: it walks every ancestor's styles, and each drawn
        line asked for it twice (about a tenth of the Devices screen's main-thread CPU, profiled)."""
        if self._style is None:
            self._style = self.rich_style
        return self._style

    @property
    def _cursor(self) -> Style:
        """The cursor row's style, kept as `_base_style` is: the cursor's row is drawn again at every
        refresh that changes its values, and each time asked for the component's style."""
        if self._cursor_style is None:
            self._cursor_style = self.get_component_rich_style("device-table--cursor")
        return self._cursor_style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style = None
        self._cursor_style = None
        self._header = None
        self._strips.clear()
        self._cell_segments.clear()

    # -- cursor ---------------------------------------------------------------------------------
    def watch_cursor_row(self, old: int, new: int) -> None:
        self.refresh()
        self.scroll_to_region(Region(0, new + 1, 1, 1), animate=False, immediate=True)
        self.post_message(self.RowHighlighted())

    def action_move(self, delta: int) -> None:
        if self._order:
            self.cursor_row = max(0, min(len(self._order) - 1, self.cursor_row + delta))

    def on_click(self, event: events.Click) -> None:
        row = event.y + self.scroll_offset.y - 1
        if 0 <= row < len(self._order):
            self.cursor_row = row


def cell_segments(cell: Text, before: str, after: str, console: Console) -> list[Segment]:
    """What Rich renders for `before`, `cell` and `after` in one Text, made directly for a cell of one
    style (every map cell is): Rich's render costs about 30 µs a cell, and a busy host's refresh
    changes most value cells. A cell with spans, or an empty styled one, is rendered by Rich."""
    if cell.spans or (cell.style and not cell.plain):
        text = Text(no_wrap=True, end="")
        text.append(before)
        text.append_text(cell)
        text.append(after)
        return list(text.render(console))
    if not cell.style:
        return [Segment(before + cell.plain + after)]
    null = Style.null()
    return [
        Segment(before, null),
        Segment(cell.plain, console.get_style(cell.style, default=null)),
        Segment(after, null),
    ]


def _signature(cells: Sequence[Text]) -> tuple[str, ...]:
    return tuple(cell.plain + str(cell.style) for cell in cells)
