"""bench/fleet.py's Prometheus: a TSDB backfilled with `promtool tsdb create-blocks-from
openmetrics`, the evaluation times its refreshes read it at, and the bare HTTP side.

The series change from one sample (a minute) to the next, as a busy fleet's do, except the ones a
real exporter keeps constant (total memory, power cap, the device config, `up`). A refresh at a new
evaluation time therefore gets new answers, and the client's answer cache (`pair_values`, the
overview's summaries) only helps where a real fleet's answers also stay the same.
"""

from __future__ import annotations

import http.client
import random
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gaudi_tui.core.fleet import fetch
from gaudi_tui.core.fleet import metrics as m
from gaudi_tui.core.fleet.prometheus import AT_ONCE

CARDS = 8
SPAN_S = 3600
STEP_S = 60
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
FIRST_READ_S = 600
"""The first evaluation time is this far into the span (a full 5-minute lookback behind it)."""


class CannotMeasure(Exception):
    pass


def value_of(metric: str, rng: random.Random) -> float:
    """One sample of `metric`: a new draw every minute, except what an exporter keeps constant."""
    gib = 1024**3
    if metric == m.MEMORY_TOTAL.name:
        return 96.0 * gib
    if metric == m.POWER_LIMIT.name:
        return 600_000.0
    if metric == m.DEVICE_CONFIG.name:
        return 1.0
    return {
        m.UTILIZATION.name: lambda: float(rng.randint(0, 100)),
        m.MEMORY_USED.name: lambda: rng.choice((0.75, 94.3)) * gib + rng.randint(0, 2**20),
        m.MEMORY_FREE.name: lambda: rng.choice((95.2, 1.7)) * gib - rng.randint(0, 2**20),
        m.POWER.name: lambda: float(rng.randint(80_000, 600_000)),
        m.TEMP_ONCHIP.name: lambda: float(rng.randint(20, 70)),
    }[metric]()


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
                    out.write("".join(f"{prefix}{value_of(info.name, rng)} {t}\n" for t in stamps))
                    samples += len(stamps)
        out.write("# TYPE up gauge\n")
        for host in range(hosts):
            prefix = f'up{{instance="gaudi-{host:04d}:41612",job="gaudi"}} '
            out.write("".join(f"{prefix}1 {t}\n" for t in stamps))
            samples += len(stamps)
        out.write("# EOF\n")
    return samples


def backfill(text: Path, data: Path) -> None:
    done = subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", str(text), str(data)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise CannotMeasure(f"promtool failed: {done.stderr.strip()[-400:]}")


def free_port() -> int:
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


class Clock:
    """The evaluation times of successive refreshes: a new sample every `every` refreshes (1: the
    answers change at every refresh, the worst case; 3: a 15 s scrape read by a 5 s refresh)."""

    def __init__(self, end: int, every: int) -> None:
        self.first = end - SPAN_S + FIRST_READ_S
        self.end = end
        self.every = every
        self.count = 0

    def __call__(self) -> float:
        at = self.first + (self.count // self.every) * STEP_S
        self.count += 1
        if at > self.end:
            raise CannotMeasure(f"more refreshes than the backfilled hour holds ({self.count})")
        return float(at)


class MovingReader(fetch.ScreenReader):
    """The screen's reader, each refresh at the next time of its clock."""

    def __init__(self, client: fetch.PrometheusClient, clock: Clock) -> None:
        super().__init__(client, clock.first)
        self.clock = clock

    def refresh(self, visible, mean_util=False):  # noqa: ANN001, ANN201 - as ScreenReader.refresh
        self.at = self.clock()
        return super().refresh(visible, mean_util)


class Bare:
    """The baseline's HTTP, kept as the product's is: `AT_ONCE` kept threads, each with its own
    kept-alive connection. Bodies are read, nothing is decoded, no model is built."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.local = threading.local()
        self.pool = ThreadPoolExecutor(max_workers=AT_ONCE, thread_name_prefix="bare-query")
        self.opened = 0

    def get(self, path: str) -> int:
        for attempt in (1, 2):  # a kept connection the server closed: once more on a new one
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                self.opened += 1
            try:
                conn.request("GET", path)
                with conn.getresponse() as answer:
                    return len(answer.read())
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def fetch(self, at: float, queries: list[str], present: bool = False) -> None:
        """The refresh's PromQL at `at`; with `present`, also the label-values lookup of the metrics
        present that the screen's refresh makes."""
        paths = [
            f"/api/v1/query?{urllib.parse.urlencode({'query': promql, 'time': f'{at:.3f}'})}"
            for promql in queries
        ]
        if present:
            window = {
                "match[]": fetch.PRESENT_MATCH,
                "start": f"{at - fetch.PRESENT_WINDOW_S:.3f}",
                "end": f"{at:.3f}",
            }
            paths.append(f"/api/v1/label/__name__/values?{urllib.parse.urlencode(window)}")
        list(self.pool.map(self.get, paths))

    def close(self) -> None:
        self.pool.shutdown()
