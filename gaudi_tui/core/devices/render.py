"""The device map as plain text, for `gaudi-tui devices` (scripts, logs, pasting into an issue)."""

from __future__ import annotations

from gaudi_tui.core.devices import links
from gaudi_tui.core.devices.holders import CardHolder
from gaudi_tui.core.devices.model import DeviceSnapshot
from gaudi_tui.core.devices.reading import Reading
from gaudi_tui.core.devices.sources.host import HostStats
from gaudi_tui.core.devices.usage import card_uses

HEADER = (
    "IDX",
    "MOD",
    "CARD",
    "BUS",
    "UTIL",
    "HBM RSVD MiB",
    "POWER W",
    "TEMP",
    "ECC",
    "NUMA",
    "LINK",
    "HOLDER",
)


def _v(value: float | int | None, unit: str = "") -> str:
    if value is None:
        return "-"
    return (f"{value:.0f}" if isinstance(value, float) else str(value)) + unit


def table(
    snapshot: DeviceSnapshot,
    host: HostStats | None = None,
    holders: tuple[CardHolder, ...] = (),
    extra: Reading | None = None,
) -> str:
    lines = []
    facts = [f"source: {snapshot.source}"]
    if snapshot.hl_smi_version:
        facts.append(f"hl-smi {snapshot.hl_smi_version}")
    if snapshot.driver_version:
        facts.append(f"driver {snapshot.driver_version}")
    lines.append(" · ".join(facts))
    if host is not None:
        lines.append(host.describe())
    uses = card_uses(snapshot, holders)
    rows = [HEADER]
    for d in snapshot.devices:
        use = uses.get(d.index)
        rows.append(
            (
                str(d.index),
                _v(d.module_id),
                d.product or d.name or "?",
                d.bus_id or "-",
                _v(d.utilization_pct, "%"),
                f"{_v(d.memory_used_mib)} / {_v(d.memory_total_mib)}",
                f"{_v(d.power_draw_w)} / {_v(d.power_cap_w)}",
                _v(d.temperature_c, "C"),
                _v(d.uncorrected_errors),
                _v(d.numa_node),
                links.column(snapshot.links_of(d.index)).replace("–", "-"),
                use.label() if use else "-",
            )
        )
    if snapshot.devices:
        widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
        lines.extend(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
        )
    else:
        lines.append("no cards")
    for process in snapshot.processes:
        memory = f" {process.memory_mib} MiB" if process.memory_mib is not None else ""
        user = f" ({process.user})" if process.user else ""
        command = f": {process.command}" if process.command else ""
        lines.append(f"card {process.index}: PID {process.pid} {process.name}{user}{memory}{command}")
    for index, use in uses.items():
        if use.explanation():
            lines.append(f"card {index}: busy, holder not visible")
    if extra is not None:
        for module, cpus in sorted(extra.cpus_by_module.items()):
            lines.append(f"module {module}: CPUs {cpus}, NUMA {extra.numa_by_module.get(module, '-')}")
    for card in snapshot.links:
        down = [str(p.number) for p in card.ports if not p.up]
        where = f"card {card.index}" if card.index is not None else card.bus_id or "?"
        lines.append(
            f"{where}: {card.up} of {len(card.ports)} NIC ports UP"
            + (f"; not up: {', '.join(down)}" if down else "")
        )
    if warning := links.banner(snapshot.devices, snapshot.links):
        lines.append("error: " + warning)
    lines.extend(f"error: {error}" for error in snapshot.errors)
    return "\n".join(lines)
