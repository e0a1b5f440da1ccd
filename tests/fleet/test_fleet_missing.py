"""`N missing` counts cards, not label sets: a real Prometheus scrapes a target whose first snapshot
says UUID="na" (what an exporter serves before it has read the cards) and whose card then gets a
pod's labels; the usual card count of the last hour stays the number of cards."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gaudi_tui.core.fleet import fetch
from gaudi_tui.core.fleet import metrics as m
from gaudi_tui.core.fleet.prometheus import PrometheusClient
from tests.fleet.stack import prometheus_config, start_prometheus, stop

pytestmark = [
    pytest.mark.slow,
    pytest.mark.usefixtures("prometheus_installed"),
]


def card(index: int, uuid: str, pod: str = "") -> str:
    labels = {
        "Serial": "na" if uuid == "na" else f"AN{index}",
        "UUID": uuid,
        "device": f"/dev/accel/accel{index}",
        "id": str(index),
        "fit": "na",
        "spi": "na",
        "driver": "1.22.0",
        "pod_namespace": "ml" if pod else "",
        "pod_name": pod,
    }
    text = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{m.DEVICE_CONFIG.name}{{{text}}} 1\n"


class Target:
    """Serves whatever `text` holds at each scrape."""

    def __init__(self) -> None:
        self.text = ""
        target = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                body = (f"# TYPE {m.DEVICE_CONFIG.name} gauge\n" + target.text).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.address = f"127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def target() -> Iterator[Target]:
    served = Target()
    yield served
    served.server.shutdown()


def scraped(client: PrometheusClient, promql: str, count: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while len(client.query(promql)) < count:
        assert time.monotonic() < deadline, f"Prometheus never had {count} series of {promql}"
        time.sleep(0.3)


def test_missing_counts_cards_not_label_sets(target: Target, tmp_path: Path) -> None:
    process, url = start_prometheus(prometheus_config([target.address]), tmp_path)
    try:
        client = PrometheusClient(url)
        target.text = card(0, "na") + card(1, "u1")  # the first snapshot: card 0 not read yet
        scraped(client, f'{m.DEVICE_CONFIG.name}{{UUID="na"}}', 1)
        target.text = card(0, "u0") + card(1, "u1", pod="train-1")  # read; a pod starts on card 1
        scraped(client, f"max_over_time({m.DEVICE_CONFIG.name}[1h])", 4)  # four label sets, two cards
        (usual,) = client.query(fetch.USUAL_QUERY)
        assert usual.value == 2
    finally:
        stop(process)
