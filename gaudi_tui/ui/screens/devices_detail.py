"""The Devices detail pane: the card under the cursor with its sparklines, its NIC links and every
process on it (hl-smi's table and /proc). Loaded when the map is built, not before the first frame."""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Mapping, Sequence

from rich.text import Text

from gaudi_tui.core.devices.history import History
from gaudi_tui.core.devices.model import CardLinks, Device, DeviceProcess
from gaudi_tui.core.devices.usage import CardUse
from gaudi_tui.ui.palette import Palette
from gaudi_tui.ui.widgets.sparkline_text import spark

DETAIL_SPARK = 50
DETAIL_PARTS = ("head", "live", "rest")
"""The detail's Statics (`#devices-detail-head` …), one for each part `detail_parts` makes."""
DETAIL_NOTE = (
    "Sparklines: last 5 minutes, left to right. HBM rsvd = hl-smi memory.used (reserved, not in use); "
    "power from `-Q power.draw` is the 54 V rail only."
)
NO_CARD = (
    "Devices — no card data. The map fills in when HLML, hl-smi or NVML answers; the host "
    "row above is always live."
)


def detail_parts(
    device: Device,
    history: History,
    uses: Mapping[int, CardUse],
    live: bool,
    links: tuple[CardLinks, ...],
    link_errors: Sequence[str],
    colours: Palette,
) -> tuple[Text, Text, Text]:
    """The card's detail in three parts, drawn one under another: its identity (the title line), its
    live values (utilization, HBM and power with their sparklines, the temperature line) and what
    changes seldom (its NIC links every 30 s, its processes). Apart, so that a refresh repaints the
    live part alone. `live`: the snapshot is a live hl-smi's or HLML's (not a replay's or a saved output's)."""
    window = history.size
    title = f"Card {device.index} · module {device.module_id if device.module_id is not None else '?'}"
    title += f" · {device.product or '?'} ({device.name or '?'}) · {device.bus_id or 'bus ?'}"
    title += f" · NUMA {device.numa_node if device.numa_node is not None else '?'}"
    head = Text()
    head.append(title, style="bold")
    values = Text()
    rows = (
        ("Util ", f"{_fmt(device.utilization_pct)} %", "utilization", 100),
        (
            "HBM  ",
            f"{_fmt(device.memory_used_mib)} / {_fmt(device.memory_total_mib)} MiB reserved",
            "memory",
            device.memory_total_mib,
        ),
        (
            "Power",
            f"{_fmt(device.power_draw_w)} / {_fmt(device.power_cap_w)} W",
            "power",
            device.power_cap_w,
        ),
    )
    for label, value, metric, top in rows:
        line = spark(history.series(device.index, metric), DETAIL_SPARK, window, top)
        values.append(f"{label} {line} {value}\n")
    values.append(
        f"Temp {_fmt(device.temperature_c)} °C · uncorrected ECC errors {_fmt(device.uncorrected_errors)}"
        f" · UUID {device.uuid or '?'}"
    )
    rest = links_line(device, links, link_errors, colours)
    use = uses.get(device.index)
    if use is not None and use.processes:
        rest.append(f"Processes on card {device.index} ({len(use.processes)}):\n")
    for process in use.processes if use else ():
        holder = use is not None and bool(use.holders) and process.pid == use.holders[0].pid
        rest.append(process_line(process, holder, live))
    if use and (why := use.explanation()):
        rest.append("Busy, holder not visible: " + why + "\n", style=colours.warning)
    rest.rstrip()
    return head, values, rest


def links_line(device: Device, links: tuple[CardLinks, ...], errors: Sequence[str], colours: Palette) -> Text:
    found = next((c for c in links if c.index == device.index), None)
    if found is None or not found.ports:
        why = "; ".join(errors[:1]) or "not read yet (every 30 s)"
        return Text(f"Links: unknown ({why})\n")
    line = Text(f"Links: {found.up} of {len(found.ports)} NIC ports up")
    external = [p for p in found.ports if p.type == "external"]
    if external:
        line.append(" · scale-out ")
        for at, port in enumerate(external):
            line.append(", " if at else "")
            line.append(
                f"{port.number} {'up' if port.up else 'DOWN'}", style="" if port.up else colours.error
            )
    elif not found.types_known:
        line.append(" · which are scale-out: unknown (hl-smi -n ports)")
    if found.internal_down:
        line.append(f" · scale-up down: {', '.join(map(str, found.internal_down))}", style=colours.warning)
    unknown = [p.number for p in found.ports if p.type is None and not p.up]
    if unknown:
        line.append(f" · down (type unknown): {', '.join(map(str, unknown))}", style=colours.warning)
    line.append(" · l: every port\n")
    return line


def _fmt(value: float | int | None) -> str:
    if value is None:
        return "–"
    return f"{value:.0f}" if isinstance(value, float) else str(value)


def process_line(process: DeviceProcess, holder: bool, live: bool) -> str:
    """`PID 107684 alice 16770 MiB since 2026-12-01 09:10: python train.py` (what /proc hides, said so)."""
    if process.user is None:
        who = "another user's or container's (/proc hides it)" if live else "user not recorded"
    else:
        mine = process.user == _me()
        who = process.user if mine else f"{process.user} (another user)"
    memory = f" {process.memory_mib} MiB" if process.memory_mib is not None else ""
    since = f" since {_clock(process.started)}" if process.started is not None else ""
    command = process.command or f"{process.name} (command line hidden)"
    stop = " — k stops it" if holder else ""
    return f"  PID {process.pid} {who}{memory}{since}: {command}{stop}\n"


def _me() -> str | None:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return None


def _clock(epoch: float | None) -> str:
    if epoch is None:
        return "?"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))
