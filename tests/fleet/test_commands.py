"""`gaudi-tui exporter` and `gaudi-tui fleet` as a user runs them (real processes, real HTTP)."""

from __future__ import annotations

import http.server
import json
import re
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator

import pytest

from gaudi_tui.core.fleet import fetch
from gaudi_tui.core.fleet import metrics as m
from gaudi_tui.core.fleet.prometheus import PrometheusClient, PrometheusError
from tests.conftest import PYTHON, ROOT, SAMPLES, child_env
from tests.fleet.stack import expected_cards, free_port, stop, wait_http

FIXTURE = ROOT / "tests" / "fleet" / "data" / "federate-gaudi.txt"
SAMPLE = "gaudi2e-hl288e-x8-1.24.0-table.txt"


def gaudi_tui(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "gaudi_tui", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(**env),
        cwd=ROOT,
    )


@pytest.fixture
def exporter_on_input() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    process = subprocess.Popen(
        [PYTHON, "-m", "gaudi_tui", "exporter", "--input", str(SAMPLES / SAMPLE), "--port", str(port)],
        env=child_env(),
        stderr=subprocess.PIPE,
    )
    try:
        yield f"http://127.0.0.1:{port}/metrics", process
    finally:
        stop(process)


def test_exporter_serves_intel_names_labels_and_the_replayed_values(exporter_on_input) -> None:  # noqa: ANN001
    url, process = exporter_on_input
    text = wait_http(url, 30, want="habanalabs_utilization{")
    series = [line for line in text.splitlines() if line.startswith("habanalabs_")]
    names = {re.match(r"^(\w+)\{", line).group(1) for line in series}  # type: ignore[union-attr]
    assert names == {
        m.UTILIZATION.name,
        m.MEMORY_USED.name,
        m.MEMORY_FREE.name,
        m.MEMORY_TOTAL.name,
        m.POWER.name,
        m.POWER_LIMIT.name,
        m.TEMP_ONCHIP.name,
        m.DEVICE_CONFIG.name,
    }
    assert not any(info.name in text for info in m.NOT_SERVED)  # this source has none: absent
    for line in series:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
        assert tuple(sorted(labels)) == tuple(sorted(m.LABELS)), line
        assert (labels["driver"], labels["UUID"], labels["pod_name"]) == ("1.24.0-bb94c81", "na", ""), line
    for name in names:
        assert f"# TYPE {name} gauge" in text
    assert "# HELP habanalabs_power_mW Power usage in milli-watts" in text
    cards = expected_cards(SAMPLE)
    for card in cards:
        power = [x for x in series if x.startswith(m.POWER.name + "{") and f'id="{card["id"]}"' in x]
        assert len(power) == 1 and float(power[0].rsplit(" ", 1)[1]) == card["power_mw"]
        free = [x for x in series if x.startswith(m.MEMORY_FREE.name + "{") and f'id="{card["id"]}"' in x]
        assert float(free[0].rsplit(" ", 1)[1]) == card["memory_total_bytes"] - card["memory_used_bytes"]
    process.send_signal(signal.SIGTERM)
    assert process.wait(15) == 0
    assert b"serving http://127.0.0.1:" in process.stderr.read()  # loopback unless --host says otherwise


def test_exporter_explains_a_busy_port_and_a_missing_input() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        done = gaudi_tui("exporter", "--input", str(SAMPLES / SAMPLE), "--port", port)
    assert (
        done.returncode == 2
        and f"cannot listen on 127.0.0.1:{port}" in done.stderr
        and "--port" in done.stderr
    )
    done = gaudi_tui("exporter", "--input", "/nonexistent/hl-smi.txt")
    assert done.returncode == 2 and "cannot read /nonexistent/hl-smi.txt" in done.stderr


def test_exporter_default_port_is_not_intels() -> None:
    done = gaudi_tui("exporter", "--help")
    assert done.returncode == 0 and "default 41612" in done.stdout and "41611" in done.stdout
    assert m.EXPORTER_PORT != m.INTEL_PORT


def test_fleet_reads_a_saved_federate_dump() -> None:
    done = gaudi_tui("fleet", "--input", str(FIXTURE))
    assert done.returncode == 0, done.stderr
    rows = {
        line.split()[0]: line.split() for line in done.stdout.splitlines() if line.startswith("gaudi-node")
    }
    assert rows["gaudi-node-04:41612"][1] == "down"
    assert rows["gaudi-node-02:41612"][4:6] == ["5", "1,2"]  # cards 3, 5, 7 busy: pairs fit, 4 and 8 not
    report = json.loads(gaudi_tui("fleet", "--input", str(FIXTURE), "--json").stdout)
    host = next(h for h in report["hosts"] if h["host"] == "gaudi-node-03:41612")
    assert [c["power_mw"] for c in host["cards"]] == [c["power_mw"] for c in expected_cards(SAMPLE)]


def test_fleet_without_a_server_says_how_to_give_one() -> None:
    done = gaudi_tui("fleet", GAUDI_TUI_PROMETHEUS="")
    assert (
        done.returncode == 2 and "--prometheus URL" in done.stderr and "GAUDI_TUI_PROMETHEUS" in done.stderr
    )


def test_fleet_unreachable_prometheus() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = gaudi_tui("fleet", GAUDI_TUI_PROMETHEUS=url)  # the environment variable is read
    assert done.returncode == 2 and f"Prometheus unreachable at {url}" in done.stderr
    done = gaudi_tui("--prometheus", "localhost:9090", "fleet")
    assert done.returncode == 2 and "not an http:// or https:// URL" in done.stderr


def test_a_server_that_is_not_prometheus() -> None:
    class Plain(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"<html>grafana</html>")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Plain)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(PrometheusError, match="did not answer like Prometheus"):
            PrometheusClient(f"http://127.0.0.1:{server.server_port}").query("up")
    finally:
        server.shutdown()


def test_exporter_without_a_source_says_why_and_serves_no_card() -> None:
    from pathlib import Path

    port = free_port()
    env = child_env(PATH=str(Path(PYTHON).parent))  # no hl-smi, even on a Gaudi host
    process = subprocess.Popen(
        [PYTHON, "-m", "gaudi_tui", "exporter", "--port", str(port)], env=env, stderr=subprocess.PIPE
    )
    try:
        text = wait_http(f"http://127.0.0.1:{port}/metrics", 30)
        assert "habanalabs_" not in text  # nothing made up
    finally:
        stop(process)
    assert b"`hl-smi` is not on PATH" in process.stderr.read()


def test_exporter_serves_nic_port_status_with_intels_labels_from_saved_outputs() -> None:
    """`exporter --input` of a table, `-n link` and `-n ports`: one series per port, 1 = up, 0 = down,
    `port_type` external/internal; read back by the Fleet reader, card 3 port 8 is the one down."""
    from prometheus_client import generate_latest

    from gaudi_tui.core.devices.parsers.detect import read_inputs
    from gaudi_tui.core.fleet.exporter import LatestSnapshot, registry_for

    names = ["gaudi2-hl225-x8-1.20.0-busy-table.txt", "made-gaudi2-x8-nic-link-card3-port8-down.txt"]
    names.append("made-gaudi2-x8-nic-ports.txt")
    latest = LatestSnapshot(read_inputs([str(SAMPLES / n) for n in names]).to_snapshot("file"))
    text = generate_latest(registry_for(latest.get)).decode()
    lines = [line for line in text.splitlines() if line.startswith(m.NIC_PORT_STATUS.name + "{")]
    assert len(lines) == 8 * 24
    down = [line for line in lines if line.endswith(" 0.0")]
    assert len(down) == 1 and 'id="3"' in down[0] and 'port="8"' in down[0]
    assert 'port_type="external"' in down[0] and 'driver="1.19.1-6f47ddd"' in down[0]
    assert sum('port_type="external"' in line for line in lines) == 8 * 3
    fleet = fetch.from_text(text, "saved", "gaudi2-host")
    assert fleet.hosts[0].down_ports() == ["card 3: port 8"]
