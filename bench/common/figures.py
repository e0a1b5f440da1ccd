"""How every bench prints a figure: the median with min–max, and the load average beside it."""

from __future__ import annotations

import os
import statistics


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    """`median (min a, max b)` in `fmt`."""
    return f"{fmt.format(statistics.median(values))} (min {fmt.format(min(values))}, max {fmt.format(max(values))})"


def load() -> str:
    """The 1, 5 and 15 min load averages and the CPU count (figures on a shared machine move with it)."""
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} CPUs)"
