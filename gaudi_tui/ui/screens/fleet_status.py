"""What the Fleet screen says above its rows and which rows it shows: the metrics and orders it
cycles through, the filter, the status lines and the banner's text."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from gaudi_tui.core.fleet.model import HOST_CARDS, HostSummary, Overview, worst_first
from gaudi_tui.ui.screens.fleet_source import FleetSource

METRICS = (("utilization", "util %"), ("hbm", "HBM %"), ("power", "power % of cap"), ("temperature", "°C"))
Sort = Callable[[list[HostSummary]], list[HostSummary]]
SORTS: tuple[tuple[str, Sort], ...] = (
    ("worst first", worst_first),
    ("name", lambda hosts: sorted(hosts, key=lambda h: h.name)),
    ("free cards", lambda hosts: sorted(hosts, key=lambda h: (-len(h.free_ids), h.name))),
    ("busiest", lambda hosts: sorted(hosts, key=lambda h: (-(h.mean_util or -1.0), h.name))),
)


def shown_hosts(hosts: Sequence[HostSummary], sort: int, needle: str) -> list[HostSummary]:
    """The hosts in the chosen order, those matching the filter (name, state or flag) only."""
    ordered = SORTS[sort][1](list(hosts))
    if not needle:
        return ordered
    needle = needle.lower()
    return [h for h in ordered if needle in " ".join((h.name, h.state, *h.flags)).lower()]


def banner_text(lines: list[str]) -> str:
    return "\n".join(f"⚠ {line}" for line in lines)


def age_line(seen_at: float) -> str:
    """How old the rows shown are, once Prometheus stopped answering."""
    age = max(0, round(time.time() - seen_at))
    return f"showing the last answer, {age} s old (from {time.strftime('%H:%M:%S', time.localtime(seen_at))})"


def status_text(
    overview: Overview | None, source: FleetSource, size: int, metric: int, sort: int, needle: str
) -> str:
    """Two lines: the fleet's counts and where a job of `size` cards fits; then the colour, the
    order, the filter and the source."""
    parts = []
    if overview is not None:
        cards = sum(h.cards for h in overview.hosts)
        free = sum(len(h.free_ids) for h in overview.hosts)
        down = sum(h.state != "up" for h in overview.hosts)
        parts.append(f"{len(overview.hosts)} hosts · {cards} cards · {free} free · {down} down/stale")
        fits = sum(h.fits(size) for h in overview.hosts)
        if size > HOST_CARDS:
            need = -(-size // HOST_CARDS)
            verdict = "fits" if fits >= need else "does not fit"
            parts.append(
                f"a {size}-card job needs {need} whole hosts with scale-out up: {fits} ready, {verdict}"
            )
        else:
            parts.append(f"a {size}-card job fits on {fits} host(s)")
    elif source.none:
        parts.append("no Prometheus server")
    else:
        parts.append(f"asking Prometheus at {source.url}…" if source.loader is None else "reading the fleet…")
    line2 = f"colour: {METRICS[metric][1]} · sort: {SORTS[sort][0]}"
    if needle:
        line2 += f" · filter: {needle}"
    if overview is not None:
        line2 += f" · from {overview.source}"
    return " · ".join(parts) + "\n" + line2
