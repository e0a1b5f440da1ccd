"""The device map: one row per card with values, colour thresholds and 5-minute sparklines.

Only cells whose text changed are redrawn, so a 1 s refresh of 8 cards stays cheap.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from rich.text import Text
from textual.widgets import DataTable

from gaudi_tui.core.devices.history import History
from gaudi_tui.core.devices.model import Device
from gaudi_tui.core.devices.usage import CardUse
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
    ("holder", "Holder", 25),
    ("numa", "NUMA", 4),
    ("bus", "Bus", 12),
)


def _num(value: float | int | None, fmt: str = "{:.0f}") -> str:
    return "–" if value is None else fmt.format(value)


def _gib(mib: int | None) -> str:
    if mib is None:
        return "–"
    return f"{mib / 1024:.1f}" if mib < 10 * 1024 else f"{mib / 1024:.0f}"


def temperature_style(celsius: float | None) -> str:
    if celsius is None:
        return ""
    return "bold red" if celsius >= TEMP_HOT else "yellow" if celsius >= TEMP_WARN else ""


def power_style(device: Device) -> str:
    if device.power_draw_w is None or not device.power_cap_w:
        return ""
    share = device.power_draw_w / device.power_cap_w
    return "bold red" if share >= 1.0 else "yellow" if share >= POWER_WARN else ""


def row_cells(device: Device, use: CardUse | None, history: History, chosen: bool) -> tuple[Text, ...]:
    window = history.size
    util_spark = spark(history.series(device.index, "utilization"), SPARK, window, 100)
    hbm_spark = spark(history.series(device.index, "memory"), SPARK, window, device.memory_total_mib)
    power_spark = spark(history.series(device.index, "power"), SPARK, window, device.power_cap_w)
    busy = use is not None and use.busy
    holder_style = "yellow" if use is not None and use.state == "busy-hidden" else ""
    errors = device.uncorrected_errors
    return (
        Text("✓" if chosen else " ", style="bold"),
        Text(str(device.index), justify="right"),
        Text(_num(device.module_id), justify="right"),
        Text(device.product or device.name or "?"),
        Text(
            f"{_num(device.utilization_pct):>3}% {util_spark}",
            style="green" if (device.utilization_pct or 0) >= 50 else "",
        ),
        Text(
            f"{_gib(device.memory_used_mib) + '/' + _gib(device.memory_total_mib) + 'G':>8} {hbm_spark}",
            style="bold" if busy else "",
        ),
        Text(
            f"{_num(device.power_draw_w) + '/' + _num(device.power_cap_w) + 'W':>8} {power_spark}",
            style=power_style(device),
        ),
        Text(f"{_num(device.temperature_c)}°C", style=temperature_style(device.temperature_c)),
        Text(_num(errors), style="bold red" if errors else ""),
        Text(use.label() if use else "—", style=holder_style),
        Text(_num(device.numa_node)),
        Text(device.bus_id or "–"),
    )


def _signature(cells: Sequence[Text]) -> tuple[str, ...]:
    return tuple(cell.plain + str(cell.style) for cell in cells)


class DeviceTable(DataTable):
    DEFAULT_CSS = """
    DeviceTable { height: auto; max-height: 12; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self._shown: dict[int, tuple[str, ...]] = {}
        self._order: list[int] = []

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    def label_sort(self, column: str | None, arrow: str) -> None:
        """Mark the sort column's header (e.g. `Util ▼`)."""
        for key, label, _width in COLUMNS:
            self.columns[key].label = Text(f"{label} {arrow}" if key == column else label)  # type: ignore[index]
        self.refresh()

    @property
    def current_index(self) -> int | None:
        """The card index under the cursor."""
        if not self._order or not 0 <= self.cursor_row < len(self._order):
            return None
        return self._order[self.cursor_row]

    def show(
        self,
        devices: Sequence[Device],
        uses: Mapping[int, CardUse],
        history: History,
        chosen_modules: Collection[int],
    ) -> None:
        order = [d.index for d in devices]
        rows = {
            d.index: row_cells(d, uses.get(d.index), history, d.module_id in chosen_modules) for d in devices
        }
        if order != self._order:
            keep = self.current_index
            self.clear()
            for index in order:
                self.add_row(*rows[index], key=str(index))
            self._order = order
            self._shown = {i: _signature(rows[i]) for i in order}
            if keep in order:
                self.move_cursor(row=order.index(keep))
            return
        for index in order:
            signature = _signature(rows[index])
            old = self._shown.get(index)
            for (key, _label, _width), cell, new, before in zip(
                COLUMNS, rows[index], signature, old or (), strict=False
            ):
                if new != before:
                    self.update_cell(str(index), key, cell)
            self._shown[index] = signature
