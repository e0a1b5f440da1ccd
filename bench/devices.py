"""Devices: parse time, the TUI's CPU with the Devices screen open, and the long-lived poller's CPU.

1. Median time to parse an 8-card hl-smi table and an 8-card CSV snapshot (real samples), against
   `csv.reader` splitting the same CSV (the least any parser can do).
2. CPU used by the TUI process and its children (the long-lived hl-smi, the details round's
   one-shot hl-smi calls) with the Devices screen open at 1 s refresh, for one 30 s period of its
   periodic work (the details round, the full /proc holder scan) from 15 s after its start, as % of
   one core — against a bare Textual app and its child that reads the same long-lived `hl-smi -Q …
   -l 1` and shows each card's three values with sparklines in a DataTable, updated every second;
   PAIRS pairs whose order swaps, medians with min and max (`BENCH_MEASURE_S` for a longer window).
   Target: the TUI ≤ the bare table (the panel does more than the table: the details round's
   children are its, and count). Both
   read the fake hl-smi replaying one host's recording whose live values (utilization, power,
   temperature) move at every refresh, as a real host's do; the cards' identity (bus ID, module,
   name) and HBM reserved stay.
3. CPU of the long-lived `hl-smi -Q … -l N` poller vs. spawning `hl-smi -Q …` every tick (parent
   and children, same fake hl-smi, same ticks).
4. The details reader's round (NIC links and hl-smi's process table: `-n link`, once `-n ports`, per
   card, and the table, against the fake), read by the panel every 30 s while Devices is shown: this
   process's CPU and its children's a round, and what that is at the 30 s period as % of one core.
5. The card-holder scan of /proc on this machine (its processes and open fds are counted): CPU ms of
   a full scan (`find_holders`, every fd of every process) against the feed's incremental scan
   (`HolderScanner.scan`, nothing changed), and what the feed's schedule costs as % of one core
   (a scan every `holders_every` s, a full one every `holders_full_every` s) against a full scan
   every time.
"""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from gaudi_tui.data import HLSMI_SAMPLES

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = HLSMI_SAMPLES
FAKE_BIN = ROOT / "tests" / "fakes" / "bin"
TABLE = SAMPLES / "gaudi2-hl225-x8-1.20.0-busy-table.txt"
CSV = SAMPLES / "gaudi1-hl205-x8-1.18.0-query.csv"
CYCLE = "gaudi2-hl225-x8-1.20.0-busy-table.txt,gaudi2-hl225-x8-1.16.0-process-table.txt,gaudi2-hl225-x8-1.12.1-table.txt"
LIVE = {"FAKE_HLSMI_SAMPLE": TABLE.name, "FAKE_HLSMI_VARY": "1"}
"""One host's recording whose live values move at every refresh as a real host's do (utilization, power,
temperature), its cards' identity and HBM staying: what both apps of the CPU pairs read."""
WARMUP_S, MEASURE_S = 15.0, float(os.environ.get("BENCH_MEASURE_S", "30"))
"""The window is one period of the panel's 30 s work (`details.EVERY_S`: the details round with its
hl-smi children; `holders_full_every`: the full /proc holder scan), and starts after the first
round (at the start, ~1-3 s) so the second (~32-36 s) falls well inside it: one of each per window,
as at any moment of a long session. `BENCH_MEASURE_S` lengthens it (a multiple of 30 s keeps that)."""
PAIRS = int(os.environ.get("BENCH_PAIRS", "3"))
TICK_S, TICKS = 0.5, 20

WINDOW = r"""
import json, os, sys, time
import psutil

def tree_cpu():
    # (this process's CPU, its children's): its own on the ns clock; the children's as the reaped
    # ones' (os.times) plus the live ones' and what they reaped (psutil, 10 ms ticks).
    done = os.times()
    live = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
            live += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return time.process_time(), done.children_user + done.children_system + live

def measure(app):
    # The app's CPU seconds and its children's between WARMUP_S and WARMUP_S + MEASURE_S, as JSON
    # in the file argv[3]; then it quits.
    warm, span, out = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    began = []
    app.set_timer(warm, lambda: began.append(tree_cpu()))

    def done():
        (own, children), (own0, children0) = tree_cpu(), began[0]
        with open(out, "w") as f:
            json.dump({"own": own - own0, "children": children - children0}, f)
        app.exit()

    app.set_timer(warm + span, done)
"""

TUI = (
    WINDOW
    + r"""
from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.ui.app import GaudiApp

class Bench(GaudiApp):
    def on_mount(self):  # GaudiApp's on_mount runs too: Textual calls each class's handler
        measure(self)

Bench(accelerator=Accelerator("cpu", "bench"), hostname="bench").run(headless=True, size=(100, 30))
"""
)

BARE = (
    WINDOW
    + r"""
import csv, subprocess, threading
from textual.app import App
from textual.widgets import DataTable

LEVELS = "▁▂▃▄▅▆▇█"
FIELDS = "index,utilization.aip,memory.used,memory.total,power.draw,power.max"

class Bare(App):
    # The least an app can do to show the same live answers: it reads the same long-lived
    # `hl-smi -Q … -l 1` as the panel (in a thread, as the panel does), splits each refresh's rows
    # with csv.reader and puts each card's three values with a 5-sample sparkline in a DataTable.
    def compose(self):
        yield DataTable()

    def on_mount(self):
        table = self.query_one(DataTable)
        for column in ("card", "util", "hbm", "power"):
            table.add_column(column, key=column)
        self.history = {}
        for card in range(8):
            table.add_row(str(card), "", "", "", key=str(card))
        self.child = subprocess.Popen(
            ["hl-smi", "-Q", FIELDS, "-f", "csv,noheader,nounits", "-l", "1"], stdout=subprocess.PIPE, text=True
        )
        threading.Thread(target=self.read, daemon=True).start()
        measure(self)

    def read(self):
        rows = []
        for line in self.child.stdout:
            rows.append(line)
            if len(rows) == 8:
                self.call_from_thread(self.show, list(csv.reader(rows, skipinitialspace=True)))
                rows = []

    def show(self, rows):
        table = self.query_one(DataTable)
        for index, util, used, total, power, cap in rows:
            for column, value, top in (("util", util, 100), ("hbm", used, total), ("power", power, cap)):
                series = self.history.setdefault((index, column), [])
                series.append(float(value) / float(top))
                spark = "".join(LEVELS[min(7, int(v * 7))] for v in series[-5:])
                table.update_cell(index, column, f"{value:>5} {spark}")

    def on_unmount(self):
        self.child.kill()

Bare().run(headless=True, size=(100, 30))
"""
)


def spread(values: list[float]) -> str:
    """median (min–max)"""
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def median_us(action, repeat: int = 300) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def fake_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(FAKE_BIN), str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = str(ROOT)
    env["FAKE_HLSMI_SAMPLES_DIR"] = str(SAMPLES)
    env.update(extra)
    return env


def cpu_percent(code: str, env: dict[str, str]) -> tuple[float, float]:
    """CPU % of one core used by a child app (all its threads) and by its children (hl-smi's,
    long-lived and one-shot) between WARMUP_S and WARMUP_S + MEASURE_S, as the app reads them itself
    (`WINDOW`)."""
    with tempfile.NamedTemporaryFile(prefix="gaudi-tui-bench-cpu-") as out:
        child = subprocess.run(
            [sys.executable, "-c", code, str(WARMUP_S), str(MEASURE_S), out.name],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=WARMUP_S + MEASURE_S + 60,
        )
        used = Path(out.name).read_text()
    if child.returncode != 0 or not used:
        raise RuntimeError(f"bench app failed ({child.returncode}): {child.stderr.decode()[-2000:]}")
    figures = json.loads(used)
    return 100.0 * figures["own"] / MEASURE_S, 100.0 * figures["children"] / MEASURE_S


def cpu_of(run) -> float:
    """CPU seconds of this process and its reaped children while `run` runs."""
    before = os.times()
    run()
    after = os.times()
    return sum(after[:4]) - sum(before[:4])


def long_lived(env: dict[str, str]) -> None:
    from gaudi_tui.core.devices.sources.hlsmi import Backoff, HlSmiPoller

    cancel = threading.Event()
    ticks: list[object] = []

    def on_reading(reading: object) -> None:
        ticks.append(reading)
        if len(ticks) >= TICKS:
            cancel.set()

    poller = HlSmiPoller("hl-smi", 1, on_reading, lambda *_: None, cancel, backoff=Backoff())
    poller.run()


def spawn_per_tick(env: dict[str, str]) -> None:
    from gaudi_tui.core.devices.csv_query import QUERY_FIELDS, query_args
    from gaudi_tui.core.devices.parsers.parse_csv import parse_csv
    from gaudi_tui.core.devices.sources.hlsmi_once import run_once

    for _ in range(TICKS):
        start = time.monotonic()
        parse_csv(run_once("hl-smi", query_args(QUERY_FIELDS), 10).stdout, QUERY_FIELDS)
        time.sleep(max(0.0, TICK_S - (time.monotonic() - start)))


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from bench.common.home import own_home

    own_home()
    from gaudi_tui.core.devices.parsers.parse_csv import _VALUES as parse_csv_cells
    from gaudi_tui.core.devices.parsers.parse_csv import parse_csv
    from gaudi_tui.core.devices.parsers.parse_table import parse_table

    table_text, csv_text = TABLE.read_text(), CSV.read_text()
    table_us = median_us(lambda: parse_table(table_text))
    # Each parse cold: the live poller's cell cache (`_VALUES`) would otherwise hold every cell of
    # this one text after the first of the 300, which no one-shot read of a saved CSV meets.
    csv_us = median_us(lambda: (parse_csv_cells.clear(), parse_csv(csv_text)))
    floor_us = median_us(lambda: list(csv.reader(io.StringIO(csv_text))))
    print(
        f"parse, median of 300: 8-card table {table_us:.0f} µs, 8-card CSV {csv_us:.0f} µs; "
        f"csv.reader alone {floor_us:.0f} µs (CSV ratio {csv_us / floor_us:.1f})"
    )

    env = fake_env(**LIVE)
    tui: list[tuple[float, float]] = []
    bare: list[tuple[float, float]] = []
    for pair in range(PAIRS):  # pairs in swapped order (TUI–bare, bare–TUI), so drifting load hits both alike
        for side in (tui, bare) if pair % 2 == 0 else (bare, tui):
            side.append(cpu_percent(TUI if side is tui else BARE, env))
    ratios = [sum(t) / max(sum(b), 0.01) for t, b in zip(tui, bare, strict=True)]
    own_ratios = [t[0] / max(b[0], 0.01) for t, b in zip(tui, bare, strict=True)]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"TUI CPU, Devices screen at 1 s refresh, 8 cards of one host whose values move at each refresh, "
        f"both apps reading the same hl-smi (fake), {MEASURE_S:.0f} s from {WARMUP_S:.0f} s × {PAIRS} pairs "
        f"(load average {load}); the app and its hl-smi children:"
    )
    for name, side in (("gaudi-tui", tui), ("bare Textual table of the same answers, 8×3 sparklines", bare)):
        total, own, children = ([sum(x) for x in side], [x[0] for x in side], [x[1] for x in side])
        print(
            f"  {name}: {spread(total)} % of one core (the app {spread(own)}, its children {spread(children)})"
        )
    met = "" if statistics.median(ratios) <= 1 else ", NOT met"
    print(f"  ratio {spread(ratios)} (target ≤ 1{met}); the apps alone {spread(own_ratios)}")

    os.environ.update(fake_env(FAKE_HLSMI_SAMPLE=CYCLE, FAKE_HLSMI_PERIOD=str(TICK_S)))
    poller = cpu_of(lambda: long_lived(env))
    spawner = cpu_of(lambda: spawn_per_tick(env))
    print(
        f"{TICKS} ticks of hl-smi (fake), parent + children CPU: long-lived poller {poller * 1000:.0f} ms, "
        f"spawn per tick {spawner * 1000:.0f} ms (spawn/long-lived ratio {spawner / max(poller, 1e-3):.1f})"
    )
    details_rounds()
    holder_scans()
    return 0


def holder_scans(repeat: int = 30) -> None:
    from gaudi_tui.core.devices.feed import MonitorConfig
    from gaudi_tui.core.devices.holders import HolderScanner, find_holders

    processes = fds = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                fds += len(os.listdir(f"{entry.path}/fd"))
                processes += 1
            except OSError:
                pass
    scanner = HolderScanner(full_every=float("inf"))
    scanner.scan()  # the first scan reads everything

    def cpu_ms(scan) -> float:
        before = time.process_time()
        scan()
        return (time.process_time() - before) * 1000

    full = [cpu_ms(find_holders) for _ in range(repeat)]
    incremental = [cpu_ms(scanner.scan) for _ in range(repeat)]
    config = MonitorConfig()
    every, full_every = config.holders_every, config.holders_full_every
    per_full = statistics.median(full) / every / 10
    scans = full_every / every
    schedule = (statistics.median(full) + (scans - 1) * statistics.median(incremental)) / full_every / 10
    note = "" if scanner.counts_fds else " (this kernel does not count fds: every scan is a full one)"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"card-holder scan, {processes} processes with {fds} open fds, {repeat} scans each (load average "
        f"{load}): full {spread(full)} ms, incremental {spread(incremental)} ms CPU a scan{note}; "
        f"a scan every {every:.0f} s: full each time {per_full:.3f} % of one core, the feed's "
        f"(full every {full_every:.0f} s) {schedule:.3f} %"
    )


def details_rounds(rounds: int = 3) -> None:
    from gaudi_tui.core.devices.details import EVERY_S, DetailsPoller
    from gaudi_tui.core.devices.parsers.parse_table import parse_table

    devices = parse_table(TABLE.read_text()).devices
    poller = DetailsPoller(lambda: devices, lambda _: None, threading.Event())
    own: list[float] = []
    children: list[float] = []
    for _ in range(rounds):  # the first round also asks `-n ports` (asked once per card)
        before = os.times()
        poller.read(devices)
        after = os.times()
        own.append((after.user + after.system - before.user - before.system) * 1000)
        children.append(
            (after.children_user + after.children_system - before.children_user - before.children_system)
            * 1000
        )
    print(
        f"details reader, {len(devices)} cards, {rounds} rounds: this process {spread(own)} ms a round "
        f"(at {EVERY_S:.0f} s: {statistics.median(own) / EVERY_S / 10:.3f} % of one core), its hl-smi "
        f"children (the fake, Python) {spread(children)} ms; first round with `-n ports`"
    )


if __name__ == "__main__":
    sys.exit(main())
