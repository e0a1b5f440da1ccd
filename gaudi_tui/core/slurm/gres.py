"""Slurm GRES strings: `gpu:gaudi2:3(IDX:4-6)`, `gres:gpu:8`, `gpu:gaudi2:0(IDX:N/A)` (a node's
`gres`/`gres_used`, a job's `tres_per_node`, one `gres_detail` item), as 22.05 prints them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from gaudi_tui.core.slurm.hostlist import split_top


@dataclass(frozen=True)
class Gres:
    """One GRES entry: `gpu:gaudi2:8(IDX:0-7)` → name gpu, type gaudi2, count 8, indices 0..7."""

    name: str
    type: str | None
    count: int
    indices: tuple[int, ...] = ()


def parse_gres(text: str | None) -> list[Gres]:
    """Every entry of a GRES string (`gres`, `gres_used`, `tres_per_node`, one `gres_detail` item)."""
    out = []
    for part in split_top(text or ""):
        part = part.removeprefix("gres:").removeprefix("gres/")
        if part in ("N/A", "(null)"):
            continue
        head, _, extra = part.partition("(")
        bits = head.split(":")
        if len(bits) == 1:
            name, kind, count = bits[0], None, "1"
        elif len(bits) == 2:
            name, kind, count = (bits[0], None, bits[1]) if bits[1].isdigit() else (bits[0], bits[1], "1")
        else:
            name, kind, count = bits[0], bits[1], bits[2]
        if not count.isdigit():
            continue
        out.append(Gres(name, kind, int(count), _indices(extra)))
    return out


def _indices(extra: str) -> tuple[int, ...]:
    match = re.search(r"IDX:([0-9,\-]+)", extra)
    if not match:
        return ()
    out: list[int] = []
    for item in match.group(1).split(","):
        low, _, high = item.partition("-")
        if low.isdigit():
            out.extend(range(int(low), int(high or low) + 1))
    return tuple(out)


def cards_of(entries: Iterable[Gres], names: Iterable[str] = ("gpu", "hpu")) -> int:
    wanted = set(names)
    return sum(g.count for g in entries if g.name in wanted)
