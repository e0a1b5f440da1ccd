"""Slurm host lists: `n[1-2],gpu[08-10],login` ↔ names, without calling `scontrol show hostnames`."""

from __future__ import annotations

import functools
import re

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside brackets and parentheses (`a[1,3],b(x,y)` → two parts)."""
    if "[" not in text and "(" not in text:
        return [p.strip() for p in text.split(sep) if p.strip()]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth = max(0, depth - 1)
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def expand(hostlist: str) -> list[str]:
    """Every host name of a host list, in Slurm's order; '' and '(null)' give []."""
    return list(expanded(hostlist))


@functools.lru_cache(maxsize=4096)
def expanded(hostlist: str) -> tuple[str, ...]:
    """`expand`, remembered: a queue's jobs share node lists, and a refresh reads each job's."""
    if not hostlist or hostlist in ("(null)", "None assigned"):
        return ()
    names: list[str] = []
    for part in split_top(hostlist):
        names.extend(_expand_one(part))
    return tuple(names)


def _expand_one(part: str) -> list[str]:
    match = re.search(r"\[([^\]]*)\]", part)
    if match is None:
        return [part]
    head, tail = part[: match.start()], part[match.end() :]
    out = []
    for item in match.group(1).split(","):
        found = _RANGE.match(item.strip())
        if found is None:
            return [part]  # not a range we know: keep it whole
        low, high = found.group(1), found.group(2) or found.group(1)
        width = len(low) if low.startswith("0") else 0
        for number in range(int(low), int(high) + 1):
            out.extend(_expand_one(f"{head}{number:0{width}d}{tail}"))
    return out
