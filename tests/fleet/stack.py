"""A real Prometheus (1 s scrapes) on loopback scraping three `gaudi-tui exporter` processes fed by
the fake hl-smi replaying three real recorded samples, plus one target that never answers.

Skips when the `prometheus` binary (Debian package `prometheus`) is not on PATH.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

from tests import required
from tests.conftest import FAKES, PYTHON, ROOT, SAMPLES


def _load_replay() -> ModuleType:
    """The fake hl-smi's own reader of the samples (independent of gaudi_tui's parsers), loaded from
    its file: putting tests/fakes on sys.path would make the fake pyhlml importable for every test."""
    spec = importlib.util.spec_from_file_location("fleet_hlsmi_replay", FAKES / "hlsmi_replay.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hlsmi_replay = _load_replay()

# Gaudi 1, Gaudi 2 (three cards busy), Gaudi 2E. No real Gaudi 3 hl-smi recording exists in the repo.
REPLAYED = (
    "gaudi1-hl205-x8-1.4.1-table.txt",
    "gaudi2-hl225-x8-1.20.0-busy-table.txt",
    "gaudi2e-hl288e-x8-1.24.0-table.txt",
)
SCRAPE_S = 1.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


CARD_VALUES = (
    "id",
    "utilization_pct",
    "memory_used_bytes",
    "memory_total_bytes",
    "power_mw",
    "power_limit_mw",
    "temperature_c",
)
"""The card fields `expected_cards` gives, compared with what the reader and Prometheus return."""


def expected_cards(sample: str) -> list[dict[str, float]]:
    """The card values the exporter must serve for a replayed sample, read by the fake's own regexes."""
    mib = 1_048_576
    return [
        {
            "id": int(card["index"]),
            "utilization_pct": float(card["utilization.aip"]),
            "memory_used_bytes": float(card["memory.used"]) * mib,
            "memory_total_bytes": float(card["memory.total"]) * mib,
            "power_mw": float(card["power.draw"]) * 1000,
            "power_limit_mw": float(card["power.max"]) * 1000,
            "temperature_c": float(card["temperature.aip"]),
        }
        for card in hlsmi_replay.cards_from_table(hlsmi_replay.read_text(sample))
    ]


def wait_http(url: str, timeout: float, want: str = "", also: tuple[int, ...] = ()) -> str:
    """The body `url` answers once it holds `want`; an HTTP error status in `also` counts as the
    answer (401: a Prometheus that wants a password is up), and gives ""."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                body = answer.read().decode()
            if want in body:
                return body
        except urllib.error.HTTPError as error:
            if error.code in also:
                return ""
            last = str(error)
        except OSError as error:
            last = str(error)
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer{' with ' + want if want else ''} in {timeout} s ({last})")


def stop(process: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGTERM) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@dataclass
class Exporter:
    sample: str
    port: int
    workdir: Path
    process: subprocess.Popen[bytes] | None = None
    env: dict[str, str] = field(default_factory=dict)
    """More environment for the exporter and its fake hl-smi (e.g. FAKE_HLSMI_LINK)."""
    args: tuple[str, ...] = ()

    @property
    def instance(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        path = os.pathsep.join([str(FAKES / "bin"), str(Path(PYTHON).parent), os.environ.get("PATH", "")])
        env = {
            **os.environ,
            "PATH": path,
            "PYTHONPATH": str(ROOT),
            "FAKE_HLSMI_SAMPLES_DIR": str(SAMPLES),
            "FAKE_HLSMI_SAMPLE": self.sample,
            "GAUDI_TUI_HOME": str(self.workdir / "home"),
            **self.env,
        }
        log = open(self.workdir / f"exporter-{self.port}.log", "ab")  # noqa: SIM115 (the child keeps it)
        self.process = subprocess.Popen(
            [PYTHON, "-m", "gaudi_tui", "exporter", "--port", str(self.port), "--interval", "1", *self.args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        wait_http(f"http://{self.instance}/metrics", 60, want="habanalabs_utilization{")

    def kill(self) -> None:
        """SIGKILL the exporter (and its hl-smi child: the whole session) as a crash would."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)


@dataclass
class FleetStack:
    url: str
    exporters: list[Exporter]
    dead: str
    """host:port of the target that accepts connections and never answers."""
    prometheus: subprocess.Popen[bytes] | None = None
    others: list[socket.socket] = field(default_factory=list)

    def by_instance(self, instance: str) -> Exporter:
        return next(e for e in self.exporters if e.instance == instance)

    def raw_up(self, instance: str, window_s: int = 60) -> list[tuple[float, float]]:
        """Prometheus's stored `up` samples of one target (timestamp, value), oldest first."""
        query = urllib.parse.urlencode({"query": f'up{{instance="{instance}"}}[{window_s}s]'})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{query}", timeout=5) as answer:
            result = json.load(answer)["data"]["result"]
        return [(float(t), float(v)) for t, v in result[0]["values"]] if result else []


def prometheus_config(targets: list[str], names: dict[str, str] | None = None) -> str:
    """One job `gaudi` scraping `targets` every second; `names` renames a target's `instance`."""
    lines = [
        "global:",
        f"  scrape_interval: {SCRAPE_S:g}s",
        "  scrape_timeout: 900ms",
        "  evaluation_interval: 1s",
        "scrape_configs:",
        "  - job_name: gaudi",
        "    static_configs:",
    ]
    for target in targets:
        lines.append(f"      - targets: ['{target}']")
        if names and target in names:
            lines.append(f"        labels: {{instance: '{names[target]}'}}")
    return "\n".join(lines) + "\n"


def start_prometheus(
    config_text: str, workdir: Path, port: int | None = None, args: tuple[str, ...] = ()
) -> tuple[subprocess.Popen[bytes], str]:
    """A Prometheus on loopback (a free port unless `port`) with its TSDB in `workdir` and more
    command-line `args`; (process, URL) once ready (`/-/ready` answers, or asks for a password)."""
    port = port or free_port()
    config = workdir / "prometheus.yml"
    config.write_text(config_text)
    log = open(workdir / "prometheus.log", "ab")  # noqa: SIM115 (the child keeps it)
    process = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
            *args,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/-/ready", 60, also=(401,))
    except AssertionError:
        stop(process)
        raise
    return process, url


def silent_target() -> socket.socket:
    """A socket that listens and never accepts: a scrape target that never answers."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    return silent


@pytest.fixture(scope="package")
def fleet_stack() -> Iterator[FleetStack]:
    required.tools("prometheus", "prometheus")
    workdir = Path(tempfile.mkdtemp(prefix="gaudi-tui-fleet-"))
    os.chmod(workdir, 0o700)
    silent = silent_target()
    dead = f"127.0.0.1:{silent.getsockname()[1]}"
    exporters = [Exporter(sample, free_port(), workdir) for sample in REPLAYED]
    stack = FleetStack("", exporters, dead, others=[silent])
    try:
        for exporter in exporters:
            exporter.start()
        config = prometheus_config([e.instance for e in exporters] + [dead])
        stack.prometheus, stack.url = start_prometheus(config, workdir)
        yield stack
    finally:
        if stack.prometheus is not None:
            stop(stack.prometheus)
        for exporter in exporters:
            if exporter.process is not None:
                stop(exporter.process)
        for sock in stack.others:
            sock.close()
        shutil.rmtree(workdir, ignore_errors=True)
