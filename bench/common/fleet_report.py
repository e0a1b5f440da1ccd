"""bench/fleet.py's report: each figure with its baseline from the same run, its ratio and its target."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

Pair = tuple[list[float], list[float]]
"""Ours and bare: one figure per run, alternated."""
RATIO_TARGET = 1.1
RATIO_SIZES = (512, 1024, 2048)
"""A screen refresh ≤ 1.1× the same PromQL bare at these sizes (a small fleet's few milliseconds are
printed, not judged)."""
CPU_TARGET = 2.0
"""The client's CPU per refresh ≤ 2× bare's, at every size."""
PANEL_TARGET = 2.0
"""The panel's CPU with the Fleet screen refreshing every 5 s: ≤ 2 % of a core."""
PROMETHEUS_S = 0.3
"""A refresh ≤ 300 ms where Prometheus alone allows it: past it, the bare queries say Prometheus is
the slow part."""


def fmt(values: list[float], unit: str = "ms") -> str:
    return f"{statistics.median(values):.1f} {unit} (min {min(values):.1f}, max {max(values):.1f})"


def ratio_of(ours: list[float], bare: list[float]) -> tuple[float, float, float]:
    ratios = [o / b for o, b in zip(ours, bare, strict=True)]
    return statistics.median(ratios), min(ratios), max(ratios)


def met(ok: bool) -> str:
    return "met" if ok else "NOT met"


@dataclass
class Figures:
    """What bench/fleet.py measured, by fleet size and case (`modes`: name → how it is said)."""

    sizes: tuple[int, ...]
    modes: dict[str, str]
    cards: int
    runs: int
    visible: int
    refresh: dict[tuple[int, str], Pair] = field(default_factory=dict)
    cpu: dict[tuple[int, str], Pair] = field(default_factory=dict)
    """Process CPU time (ms) of each timed refresh, ours and bare."""
    opened: dict[tuple[int, str], tuple[float, float]] = field(default_factory=dict)
    full: dict[tuple[int, str], Pair] = field(default_factory=dict)
    full_cpu: dict[tuple[int, str], Pair] = field(default_factory=dict)
    panel: dict[tuple[int, str], list[float]] = field(default_factory=dict)
    """% of a core the panel uses with the Fleet screen refreshing every 5 s, in each 5 s period."""
    tui: dict[str, list[float]] = field(default_factory=dict)

    def report(self, target_size: int, window_s: float) -> None:
        for mode, says in self.modes.items():
            self._refresh_table(mode, says)
        self._cpu_table()
        self._panel(window_s)
        frame, empty = self.tui["first_frame"], self.tui["empty_frame"]
        print(
            f"first frame of the Fleet screen: {fmt(frame)}, {statistics.median(frame) / statistics.median(empty):.2f}× "
            f"an empty panel screen's (header + footer) {fmt(empty)} (target ≤ 1.3×); the very first (module "
            f"import) {self.tui['cold_frame'][0]:.0f} ms"
        )
        print(
            f"first data ({target_size} hosts listed, the rows on screen with their cards): {fmt(self.tui['first_data'])}"
        )

    def _refresh_table(self, mode: str, says: str) -> None:
        print(
            f"\nFleet screen refresh, {says} (aggregates of every host + the cards of {self.visible} rows, "
            f"decoded, + model), median of {self.runs} alternated runs; bare: the same PromQL on kept threads "
            "and kept-alive connections, bodies read:"
        )
        print(
            f"{'hosts':>6} {'cards':>6}  {'refresh':<34} {'bare':<34} ratio (min–max)   target ≤ {RATIO_TARGET}"
        )
        for hosts in self.sizes:
            ours, bare = self.refresh[hosts, mode]
            median, low, high = ratio_of(ours, bare)
            slow = statistics.median(bare) > PROMETHEUS_S * 1000
            print(
                f"{hosts:>6} {hosts * self.cards:>6}  {fmt(ours):<34} {fmt(bare):<34} {median:4.2f}× "
                f"({low:.2f}–{high:.2f})  {met(median <= RATIO_TARGET) if hosts in RATIO_SIZES else '—'}"
                + (f"; Prometheus alone takes over {PROMETHEUS_S * 1000:.0f} ms" if slow else "")
            )
        for (hosts, case), (ours, bare) in self.full.items():
            if case == mode:
                median, low, high = ratio_of(ours, bare)
                print(
                    f"full refresh at {hosts} hosts (gaudi-tui fleet: every card's values): {fmt(ours)}, "
                    f"bare {fmt(bare)}, {median:.2f}× ({low:.2f}–{high:.2f})"
                )

    def _cpu_table(self) -> None:
        print(
            "\nCPU per refresh (process CPU time of each timed run, ours and bare; ratio: median of the "
            f"per-run ratios, target ≤ {CPU_TARGET}× at every size) and connections opened per refresh:"
        )
        for (hosts, mode), (ours, bare) in self.cpu.items():
            median, low, high = ratio_of(ours, bare)
            opened = self.opened[hosts, mode]
            print(
                f"  {hosts:>5} hosts, {mode:<8}: {fmt(ours)}, bare {fmt(bare)}, {median:.2f}× ({low:.2f}–{high:.2f}) "
                f"{met(median <= CPU_TARGET)}; opened {opened[0]:.1f}, bare {opened[1]:.1f}"
            )
        for (hosts, mode), (ours, bare) in self.full_cpu.items():
            median, low, high = ratio_of(ours, bare)
            print(
                f"  full, {hosts} hosts, {mode}: {fmt(ours)}, bare {fmt(bare)}, {median:.2f}× ({low:.2f}–{high:.2f})"
            )

    def _panel(self, window_s: float) -> None:
        idle = self.tui["idle_cpu"][0]
        print(
            f"\nTUI CPU with the Fleet screen refreshing every 5 s (process CPU time over {window_s:.0f} s, "
            "median of its 5 s periods, each with one refresh; "
            f"baseline: the same app idle on an empty panel screen, {idle:.2f} % of a core):"
        )
        for (hosts, mode), shares in self.panel.items():
            share = statistics.median(shares)
            print(
                f"  {hosts} hosts, {self.modes[mode]}: {share:.2f} % (min {min(shares):.2f}, max {max(shares):.2f}) of a core ({share / 100 * 5000:.0f} ms "
                f"per refresh period, {share / idle if idle else float('inf'):.1f}× idle); target ≤ {PANEL_TARGET} %: "
                f"{met(share <= PANEL_TARGET)}"
            )
