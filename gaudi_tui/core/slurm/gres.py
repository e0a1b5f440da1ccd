"""Slurm GRES strings: `gpu:gaudi2:3(IDX:4-6)`, `gres:gpu:8`, `gpu:gaudi2:0(IDX:N/A)` (a node's
`gres`/`gres_used`, a job's `tres_per_node`, one `gres_detail` item), as 22.05 prints them."""

from __future__ import annotations

import functools
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


CARD_NAMES = ("gpu", "hpu")
CACHED = 4096
"""Distinct GRES strings remembered: a queue repeats a few (`gres:gpu:8`, a whole node's
`gpu:gaudi2:8(IDX:0-7)`), and a refresh reads one or two a job."""


def parse_gres(text: str | None) -> list[Gres]:
    """Every entry of a GRES string (`gres`, `gres_used`, `tres_per_node`, one `gres_detail` item)."""
    return list(entries(text or ""))


@functools.lru_cache(maxsize=CACHED)
def entries(text: str) -> tuple[Gres, ...]:
    """`parse_gres`, remembered: the same string is read once."""
    out = []
    for part in split_top(text):
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
    return tuple(out)


@functools.lru_cache(maxsize=CACHED)
def card_indices(text: str) -> tuple[int, ...]:
    """The card indices of one `gres_detail` item (`gpu:gaudi2:3(IDX:4-6)` → 4, 5, 6)."""
    return tuple(i for g in entries(text) if g.name in CARD_NAMES for i in g.indices)


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


def cards_of(found: Iterable[Gres], names: Iterable[str] = CARD_NAMES) -> int:
    wanted = set(names)
    return sum(g.count for g in found if g.name in wanted)
