"""Fleet at scale: a real Prometheus on a TSDB backfilled with `promtool tsdb create-blocks-from
openmetrics` (64, 128, 256, 512 and 1,024 hosts × 8 cards × 1 h of `gaudi-tui exporter`'s metrics,
one sample a minute), read the way the Fleet screen reads it.

Figures (medians with min–max; each with its ratio to a baseline measured in the same run):
- one full fleet refresh (`fetch.refresh`: every query + the model build), per fleet size; baseline:
  the same PromQL fetched with bare urllib (same concurrency, no decoding, no model), alternated
  with ours run by run; the ratio is the median of the per-pair ratios. Targets at 512 hosts: ≤ 1.1×
  the bare queries, and ≤ 300 ms where Prometheus alone allows it.
- TUI CPU with the Fleet screen refreshing every 5 s, at 512 hosts (process CPU time over a
  headless run); baseline: the same app idle on an empty panel screen. Target: ≤ 2 % of a core.
- first frame of the Fleet screen (module import + mount + first paint, before its queries start) and
  first data (512 hosts drawn); baseline: first frame of an empty panel screen (header + footer).
Exit 1 only when it could not measure (no prometheus/promtool, backfill or Prometheus failed).
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gaudi_tui.core.fleet import fetch  # noqa: E402
from gaudi_tui.core.fleet import metrics as m  # noqa: E402
from gaudi_tui.core.fleet.model import Fleet  # noqa: E402
from gaudi_tui.core.fleet.prometheus import PrometheusClient  # noqa: E402

SIZES = (64, 128, 256, 512, 1024)
TARGET_SIZE = 512
CARDS = 8
SPAN_S = 3600
STEP_S = 60
RUNS = 7
CPU_WINDOW_S = 15.0
IDLE_WINDOW_S = 15.0
FRAME_RUNS = 6
SERVED = (
    m.UTILIZATION,
    m.MEMORY_USED,
    m.MEMORY_FREE,
    m.MEMORY_TOTAL,
    m.POWER,
    m.POWER_LIMIT,
    m.TEMP_ONCHIP,
    m.DEVICE_CONFIG,
)


class CannotMeasure(Exception):
    pass


def value_of(metric: str, rng: random.Random) -> float:
    gib = 1024**3
    return {
        m.UTILIZATION.name: float(rng.randint(0, 100)),
        m.MEMORY_USED.name: float(rng.choice((0.75, 94.3)) * gib),
        m.MEMORY_FREE.name: float(rng.choice((95.2, 1.7)) * gib),
        m.MEMORY_TOTAL.name: 96.0 * gib,
        m.POWER.name: float(rng.randint(80_000, 600_000)),
        m.POWER_LIMIT.name: 600_000.0,
        m.TEMP_ONCHIP.name: float(rng.randint(20, 70)),
        m.DEVICE_CONFIG.name: 1.0,
    }[metric]


def write_openmetrics(path: Path, hosts: int, end: int) -> int:
    """`hosts` exporters' series over the hour before `end` (and `up`); returns the sample count."""
    rng = random.Random(hosts)
    stamps = [str(t) for t in range(end - SPAN_S, end + 1, STEP_S)]
    samples = 0
    with path.open("w") as out:
        for info in SERVED:
            out.write(f"# TYPE {info.name} gauge\n# HELP {info.name} {info.help}\n")
            for host in range(hosts):
                for card in range(CARDS):
                    prefix = (
                        f'{info.name}{{Serial="na",UUID="na",device="na",driver="1.20.0-bd87f71",id="{card}",'
                        f'instance="gaudi-{host:04d}:41612",job="gaudi"}} '
                    )
                    value = value_of(info.name, rng)
                    out.write("".join(f"{prefix}{value} {t}\n" for t in stamps))
                    samples += len(stamps)
        out.write("# TYPE up gauge\n")
        for host in range(hosts):
            prefix = f'up{{instance="gaudi-{host:04d}:41612",job="gaudi"}} '
            out.write("".join(f"{prefix}1 {t}\n" for t in stamps))
            samples += len(stamps)
        out.write("# EOF\n")
    return samples


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_prometheus(data: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    config = data.parent / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
    process = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            "--storage.tsdb.retention.time=10y",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=error",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:
                if answer.status == 200:
                    return process, url
        except OSError:
            pass
        time.sleep(0.3)
    process.kill()
    raise CannotMeasure("Prometheus did not become ready on the backfilled TSDB")


def bare_fetch(url: str, at: float) -> None:
    """The baseline: the refresh's PromQL over bare urllib, same concurrency, bodies read only."""
    queries = list(fetch.fleet_queries().values())

    def get(promql: str) -> int:
        query = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
        with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=30) as answer:
            return len(answer.read())

    with ThreadPoolExecutor(max_workers=len(queries)) as pool:
        list(pool.map(get, queries))


def timed(action: Callable[[], object], runs: int = RUNS, warm: bool = True) -> list[float]:
    if warm:
        action()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return times


def fmt(values: list[float], unit: str = "ms") -> str:
    return f"{statistics.median(values):.1f} {unit} (min {min(values):.1f}, max {max(values):.1f})"


def measure_refresh(url: str, hosts: int, at: float) -> tuple[list[float], list[float]]:
    client = PrometheusClient(url, timeout=30)
    fleet = fetch.refresh(client, at)
    cards = sum(len(h.cards) for h in fleet.hosts)
    if len(fleet.hosts) != hosts or cards != hosts * CARDS:
        raise CannotMeasure(
            f"expected {hosts} hosts × {CARDS} cards, got {len(fleet.hosts)} hosts, {cards} cards: {fleet.problems}"
        )
    bare_fetch(url, at)  # warm
    ours: list[float] = []
    bare: list[float] = []
    for _ in range(RUNS):  # alternated, so a drifting load hits both alike
        ours += timed(lambda: fetch.refresh(client, at), runs=1, warm=False)
        bare += timed(lambda: bare_fetch(url, at), runs=1, warm=False)
    return ours, bare


async def measure_tui(url: str, hosts: int, at: float) -> dict[str, list[float]]:
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

            def load(go: threading.Event = go) -> Fleet:
                go.wait(60)
                return fetch.refresh(client, at)

            screen = FleetScreen(loader=load, interval=5.0)
            await app.push_screen(screen)
            await pilot.pause()
            out["cold_frame" if run == 0 else "first_frame"].append((time.perf_counter() - started) * 1000)
            go.set()
            deadline = time.monotonic() + 60
            while screen.fleet is None:
                if time.monotonic() > deadline:
                    raise CannotMeasure("the Fleet screen never loaded")
                await pilot.pause(0.01)
            await pilot.pause()
            out["first_data"].append((time.perf_counter() - started) * 1000)
            if len(screen.fleet.hosts) != hosts:
                raise CannotMeasure(f"the screen shows {len(screen.fleet.hosts)} hosts, not {hosts}")
            app.pop_screen()
            await pilot.pause(0.5)
    return out


async def measure_cpu(url: str, at: float) -> float:
    """% of a core the panel process uses with the Fleet screen refreshing every 5 s."""
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.ui.app import GaudiApp
    from gaudi_tui.ui.screens.fleet import FleetScreen

    client = PrometheusClient(url, timeout=30)
    app = GaudiApp(accelerator=Accelerator("cpu", "bench"), hostname="bench")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = FleetScreen(loader=lambda: fetch.refresh(client, at), interval=5.0)
        await app.push_screen(screen)
        deadline = time.monotonic() + 60
        while screen.fleet is None:
            if time.monotonic() > deadline:
                raise CannotMeasure("the Fleet screen never loaded")
            await pilot.pause(0.05)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await pilot.pause(CPU_WINDOW_S)
        return (time.process_time() - cpu0) / (time.perf_counter() - wall0) * 100


def main() -> int:
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            print(f"bench/fleet.py: cannot measure: `{tool}` is not on PATH (Debian package prometheus)")
            return 1
    os.environ.setdefault("GAUDI_TUI_HOME", tempfile.mkdtemp(prefix="gaudi-tui-bench-"))
    workdir = Path(tempfile.mkdtemp(prefix="gaudi-tui-bench-fleet-"))
    end = int(time.time()) // STEP_S * STEP_S - STEP_S
    results: dict[int, tuple[list[float], list[float]]] = {}
    tui: dict[str, list[float]] = {}
    cpu: dict[int, float] = {}
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
            done = subprocess.run(
                [
                    "promtool",
                    "tsdb",
                    "create-blocks-from",
                    "openmetrics",
                    "-q",
                    str(text),
                    str(folder / "data"),
                ],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                raise CannotMeasure(f"promtool failed: {done.stderr.strip()[-400:]}")
            text.unlink()
            print(
                f"{hosts} hosts: {samples:,} samples written in {made:.1f} s, backfilled in "
                f"{time.perf_counter() - started:.1f} s",
                flush=True,
            )
            process, url = start_prometheus(folder / "data")
            try:
                results[hosts] = measure_refresh(url, hosts, end)
                print(f"  refresh {fmt(results[hosts][0])}; bare urllib {fmt(results[hosts][1])}", flush=True)
                if hosts == TARGET_SIZE:  # the CPU target is set at 512 hosts; 15 s each
                    cpu[hosts] = asyncio.run(measure_cpu(url, end))
                if hosts == TARGET_SIZE:
                    tui = asyncio.run(measure_tui(url, hosts, end))
            finally:
                process.terminate()
                process.wait(30)
            shutil.rmtree(folder / "data", ignore_errors=True)
    except CannotMeasure as why:
        print(f"bench/fleet.py: cannot measure: {why}")
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print("\nFleet refresh (all queries + model build), median of", RUNS, "alternated runs:")
    print(f"{'hosts':>6} {'cards':>6}  {'refresh':<34} {'bare urllib':<34} ratio (min–max)   per card")
    for hosts in SIZES:
        ours, bare = results[hosts]
        ratios = [o / b for o, b in zip(ours, bare, strict=True)]
        per_card = statistics.median(ours) / (hosts * CARDS) * 1000
        print(
            f"{hosts:>6} {hosts * CARDS:>6}  {fmt(ours):<34} {fmt(bare):<34} {statistics.median(ratios):4.2f}× "
            f"({min(ratios):.2f}–{max(ratios):.2f})  {per_card:.0f} µs"
        )
    ours, bare = results[TARGET_SIZE]
    ratio = statistics.median([o / b for o, b in zip(ours, bare, strict=True)])
    largest = statistics.median(ours)
    print(
        f"at {TARGET_SIZE} hosts: {ratio:.2f}× the bare queries (target ≤ 1.1: {'met' if ratio <= 1.1 else 'NOT met'}); "
        f"{largest:.0f} ms, bare {statistics.median(bare):.0f} ms (target ≤ 300 ms where Prometheus alone allows it)"
    )
    idle = tui["idle_cpu"][0]
    print(
        f"\nTUI CPU with the Fleet screen refreshing every 5 s ({CPU_WINDOW_S:.0f} s of process CPU time; baseline: "
        f"the same app idle on an empty panel screen, {idle:.2f} % of a core):"
    )
    for hosts in sorted(cpu):
        share = cpu[hosts]
        print(
            f"{hosts:>6} hosts: {share:.2f} % of a core ({share / 100 * 5000:.0f} ms per refresh period, "
            f"{share / idle if idle else float('inf'):.1f}× idle)"
            + (f"; target ≤ 2 %: {'met' if share <= 2 else 'NOT met'}" if hosts == TARGET_SIZE else "")
        )
    frame, empty = tui["first_frame"], tui["empty_frame"]
    print(
        f"first frame of the Fleet screen: {fmt(frame)}, {statistics.median(frame) / statistics.median(empty):.1f}× "
        f"an empty panel screen's (header + footer) {fmt(empty)} (target ≤ 1.3×); the very first (module "
        f"import) {tui['cold_frame'][0]:.0f} ms"
    )
    print(f"first data ({TARGET_SIZE} hosts drawn) after opening: {fmt(tui['first_data'])}")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
