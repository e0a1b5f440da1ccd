"""Fleet at scale: a real Prometheus on a TSDB backfilled with `promtool tsdb create-blocks-from
openmetrics` (64, 128, 256, 512, 1,024 and 2,048 hosts × 8 cards × 1 h of `gaudi-tui exporter`'s
metrics, one sample a minute, each a new value but for what an exporter keeps constant), read the
way the Fleet screen reads it, each refresh at a later evaluation time (bench/common/fleet_stack.py).
The 2,048-host TSDB (8.1 million samples) takes 30 to 80 s to write and backfill, by the machine's
load; the whole bench 4 to 8 minutes.

Two cases (`MODES`), because the client keeps its last reading of an answer that did not change:
- `changing`: every refresh reads the next minute, so every changing answer is new (the worst case);
- `scrape`: the answers change every third refresh, as a 15 s scrape read by the 5 s refresh.

Figures (medians with min–max; each with its ratio to a baseline measured in the same run; the
report and its targets: bench/common/fleet_report.py):
- one Fleet screen refresh (`fetch.ScreenReader.refresh`: the per-host aggregates of every host and
  the per-card queries of the `VISIBLE` rows a tall terminal shows, decoded, + the model build), per
  fleet size and case; baseline: the same PromQL at the same evaluation times over bare
  `http.client`, on kept threads (`AT_ONCE`, as the product's pool) and kept-alive connections (as
  the product's client), bodies read, no decoding, no model; alternated with ours run by run; the
  ratio is the median of the per-pair ratios. Targets: ≤ 1.1× the bare queries at 512, 1,024 and
  2,048 hosts, and ≤ 300 ms where Prometheus alone allows it (a size where the bare queries take
  longer says so). With each: the process CPU time per refresh, ours and bare (target: ≤ 2× bare's
  at every size), and the connections a warm refresh opens, ours and bare.
- at 512 hosts and at the largest size: the full refresh `gaudi-tui fleet` makes (`fetch.refresh`:
  every card's values) against its own PromQL bare, and the TUI's CPU with the Fleet screen
  refreshing every 5 s, in each case (process CPU time over a headless run); baseline: the same app
  idle on an empty panel screen. Target: ≤ 2 % of a core.
- first frame of the Fleet screen (mount + first paint, before its queries answer; the very first
  also imports its module) and first data (512 hosts listed, the rows on screen with their cards:
  two round trips); baseline: first frame of an empty panel screen (header + footer).
Exit 1 only when it could not measure (no prometheus/promtool, backfill or Prometheus failed).
`--sizes 64` measures one small fleet (its largest size stands for 512).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # bench/common

from common.fleet_report import Figures, Pair, fmt  # noqa: E402
from common.fleet_stack import (  # noqa: E402
    CARDS,
    Bare,
    CannotMeasure,
    Clock,
    MovingReader,
    backfill,
    start_prometheus,
    write_openmetrics,
)
from common.home import own_home  # noqa: E402

from gaudi_tui.core.fleet import fetch  # noqa: E402
from gaudi_tui.core.fleet.model import Host, Overview, worst_first  # noqa: E402
from gaudi_tui.core.fleet.prometheus import PrometheusClient  # noqa: E402

if TYPE_CHECKING:
    from textual.pilot import Pilot

    from gaudi_tui.ui.screens.fleet import FleetScreen

SIZES = (64, 128, 256, 512, 1024, 2048)
TARGET_SIZE = 512
RUNS = 7
VISIBLE = 40
"""Rows whose cards a refresh asks for: a 40-line host table (the bench's own screen shows 24)."""
CPU_WINDOW_S = 15.0
IDLE_WINDOW_S = 15.0
FRAME_RUNS = 6
MODES = {"changing": 1, "scrape": 3}
"""How often the answers change, in refreshes: at every one (the worst case), or every third (a
15 s scrape read by the screen's 5 s refresh: two refreshes in three meet the answers unchanged)."""
SAYS = {"changing": "answers changing at every refresh", "scrape": "a 15 s scrape, a 5 s refresh"}


def timed(action: Callable[[], object], runs: int = RUNS, warm: bool = True) -> list[float]:
    if warm:
        action()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return times


def pairs(ours: Callable[[], object], bare: Callable[[], object]) -> tuple[Pair, Pair]:
    """`RUNS` timings of each after one warm-up, alternated, so a drifting load hits both alike; and
    their process CPU times, less sensitive to a shared machine's load than the wall-clock times."""
    ours(), bare()
    wall: Pair = ([], [])
    cpu: Pair = ([], [])
    for _ in range(RUNS):
        for action, times, used in ((ours, wall[0], cpu[0]), (bare, wall[1], cpu[1])):
            started = time.process_time()
            times += timed(action, runs=1, warm=False)
            used.append((time.process_time() - started) * 1000)
    return wall, cpu


def visible_rows(reader: fetch.ScreenReader) -> list[str]:
    """The hosts of the first `VISIBLE` rows, worst first (the screen's default order)."""
    overview, _ = reader.refresh([])
    return [h.name for h in worst_first(overview.hosts)][:VISIBLE]


def measure_refresh(url: str, hosts: int, end: int, mode: str, figures: Figures) -> None:
    """The screen's refresh against its PromQL bare (wall and CPU time), and the connections opened
    per refresh once warm, ours and bare (both keep theirs alive)."""
    reader = MovingReader(PrometheusClient(url, timeout=30), Clock(end, MODES[mode]))
    visible = visible_rows(reader)
    overview, cards = reader.refresh(visible)
    listed = sum(h.cards for h in overview.hosts)
    if len(overview.hosts) != hosts or listed != hosts * CARDS or len(cards) != min(VISIBLE, hosts):
        raise CannotMeasure(
            f"expected {hosts} hosts × {CARDS} cards, got {len(overview.hosts)} hosts, {listed} cards, "
            f"{len(cards)} with their values: {overview.problems}"
        )
    queries = list(reader.queries(visible).values())
    bare, times = Bare(url), Clock(end, MODES[mode])
    times.count = reader.clock.count  # the k-th refresh of each side reads the same time
    bare.fetch(reader.at or 0.0, queries, present=True)  # its threads and connections, as ours have theirs
    opened, bare_opened = reader.client.opened, bare.opened
    try:
        figures.refresh[hosts, mode], figures.cpu[hosts, mode] = pairs(
            lambda: reader.refresh(visible), lambda: bare.fetch(times(), queries, present=True)
        )
    finally:
        bare.close()
    figures.opened[hosts, mode] = (
        (reader.client.opened - opened) / (RUNS + 1),
        (bare.opened - bare_opened) / (RUNS + 1),
    )


def measure_full(url: str, end: int, mode: str) -> tuple[Pair, Pair]:
    """`gaudi-tui fleet`'s refresh: every card's values."""
    client = PrometheusClient(url, timeout=30)
    queries = list(fetch.fleet_queries().values())
    ours, theirs, bare = Clock(end, MODES[mode]), Clock(end, MODES[mode]), Bare(url)
    try:
        return pairs(lambda: fetch.refresh(client, ours()), lambda: bare.fetch(theirs(), queries))
    finally:
        bare.close()


class GatedReader(MovingReader):
    """A reader whose first refresh waits for `go`: the first frame is measured before any answer."""

    def __init__(self, client: PrometheusClient, clock: Clock, go: threading.Event) -> None:
        super().__init__(client, clock)
        self.go = go

    def refresh(self, visible: Sequence[str], mean_util: bool = False) -> tuple[Overview, dict[str, Host]]:
        self.go.wait(60)
        return super().refresh(visible, mean_util)


async def wait_ready(pilot: Pilot, screen: FleetScreen) -> None:
    deadline = time.monotonic() + 60
    while not screen.ready:
        if time.monotonic() > deadline:
            raise CannotMeasure("the Fleet screen never loaded")
        await pilot.pause(0.01)
    await pilot.pause()


async def measure_tui(url: str, hosts: int, end: int) -> dict[str, list[float]]:
    """First frame / first data of the Fleet screen (the first push imports its module: `cold`),
    an empty panel screen's first frame, and the idle app's CPU (the baseline of `measure_cpu`)."""
    from textual.app import ComposeResult

    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.ui.app import GaudiApp
    from gaudi_tui.ui.screens.base import PanelScreen

    class Chrome(PanelScreen):
        """The baseline: a panel screen with the header and footer every screen has, and no body."""

        def compose_body(self) -> ComposeResult:
            yield from ()

    client = PrometheusClient(url, timeout=30)
    app = GaudiApp(accelerator=Accelerator("cpu", "bench"), hostname="bench")
    out: dict[str, list[float]] = {"empty_frame": [], "cold_frame": [], "first_frame": [], "first_data": []}
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(1.0)
        for _ in range(FRAME_RUNS):
            started = time.perf_counter()
            await app.push_screen(Chrome())
            await pilot.pause()
            out["empty_frame"].append((time.perf_counter() - started) * 1000)
            app.pop_screen()
            await pilot.pause(0.2)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await pilot.pause(IDLE_WINDOW_S)
        out["idle_cpu"] = [(time.process_time() - cpu0) / (time.perf_counter() - wall0) * 100]
        screen = None
        for run in range(FRAME_RUNS):
            started = time.perf_counter()
            from gaudi_tui.ui.screens.fleet import FleetScreen  # the first time: part of the frame

            go = threading.Event()  # the queries wait until the first frame is measured
            screen = FleetScreen(reader=GatedReader(client, Clock(end, 1), go), interval=5.0)
            await app.push_screen(screen)
            await pilot.pause()
            out["cold_frame" if run == 0 else "first_frame"].append((time.perf_counter() - started) * 1000)
            go.set()
            await wait_ready(pilot, screen)
            out["first_data"].append((time.perf_counter() - started) * 1000)
            shown = len(screen.overview.hosts) if screen.overview else 0
            if shown != hosts:
                raise CannotMeasure(f"the screen shows {shown} hosts, not {hosts}")
            app.pop_screen()
            await pilot.pause(0.5)
    return out


async def measure_cpu(url: str, end: int, mode: str) -> list[float]:
    """% of a core the panel process uses with the Fleet screen refreshing every 5 s, in each 5 s
    period of `CPU_WINDOW_S` (each holds one refresh)."""
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.ui.app import GaudiApp
    from gaudi_tui.ui.screens.fleet import FleetScreen

    client = PrometheusClient(url, timeout=30)
    app = GaudiApp(accelerator=Accelerator("cpu", "bench"), hostname="bench")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = FleetScreen(reader=MovingReader(client, Clock(end, MODES[mode])), interval=5.0)
        await app.push_screen(screen)
        await wait_ready(pilot, screen)
        shares = []
        for _ in range(int(CPU_WINDOW_S // 5)):
            cpu0, wall0 = time.process_time(), time.perf_counter()
            await pilot.pause(5.0)
            shares.append((time.process_time() - cpu0) / (time.perf_counter() - wall0) * 100)
        return shares


def main() -> int:
    global SIZES, TARGET_SIZE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="fleet sizes (hosts)")
    SIZES = tuple(parser.parse_args().sizes)
    TARGET_SIZE = TARGET_SIZE if TARGET_SIZE in SIZES else max(SIZES)
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            print(f"bench/fleet.py: cannot measure: `{tool}` is not on PATH (Debian package prometheus)")
            return 1
    began = time.monotonic()
    own_home()
    workdir = Path(tempfile.mkdtemp(prefix="gaudi-tui-bench-fleet-"))
    end = int(time.time()) // 60 * 60 - 60
    figures = Figures(SIZES, SAYS, CARDS, RUNS, VISIBLE)
    print(
        f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)"
    )
    try:
        for hosts in SIZES:
            folder = workdir / str(hosts)
            folder.mkdir()
            text = folder / "metrics.om"
            started = time.perf_counter()
            samples = write_openmetrics(text, hosts, end)
            made = time.perf_counter() - started
            started = time.perf_counter()
            backfill(text, folder / "data")
            text.unlink()
            print(
                f"{hosts} hosts: {samples:,} samples written in {made:.1f} s, backfilled in "
                f"{time.perf_counter() - started:.1f} s",
                flush=True,
            )
            process, url = start_prometheus(folder / "data")
            try:
                for mode in MODES:
                    measure_refresh(url, hosts, end, mode, figures)
                    ours, bare = figures.refresh[hosts, mode]
                    print(f"  {mode}: refresh {fmt(ours)}; bare {fmt(bare)}", flush=True)
                if hosts in (TARGET_SIZE, max(SIZES)):  # the full refresh and the panel's CPU (15 s each)
                    for mode in MODES:
                        full = figures.full[hosts, mode], figures.full_cpu[hosts, mode] = measure_full(
                            url, end, mode
                        )
                        print(
                            f"  {mode}: full refresh (gaudi-tui fleet) {fmt(full[0][0])}; bare {fmt(full[0][1])}"
                        )
                        figures.panel[hosts, mode] = asyncio.run(measure_cpu(url, end, mode))
                if hosts == TARGET_SIZE:
                    figures.tui = asyncio.run(measure_tui(url, hosts, end))
            finally:
                process.terminate()
                process.wait(30)
            shutil.rmtree(folder / "data", ignore_errors=True)
    except CannotMeasure as why:
        print(f"bench/fleet.py: cannot measure: {why}")
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    figures.report(TARGET_SIZE, CPU_WINDOW_S)
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"bench/fleet.py ran {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
