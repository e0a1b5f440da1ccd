"""A server's own figures from its /metrics (core/serve/figures.py): vLLM's exposition (golden
texts, tests/data/vllm/README.md names their source), and a real `transformers serve`, which
exports none."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gaudi_tui.core.serve import ready
from gaudi_tui.core.serve.figures import (
    NO_FIGURES,
    FiguresError,
    ServerFigures,
    fetch_figures,
    figure_lines,
    job_figure_lines,
    parse_figures,
)
from tests.chat.serving import Server, free_port
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "vllm"


def test_vllm_v1_figures_are_read_with_the_newer_kv_cache_name() -> None:
    figures = parse_figures((DATA / "metrics_v1.txt").read_text())
    assert figures == ServerFigures(
        running=3, waiting=2, kv_cache_usage=0.4125, prompt_tokens=18432, generation_tokens=51200
    )
    assert figure_lines(figures) == [
        "requests: 3 running, 2 waiting",
        "KV cache: 41.2% used",
        "tokens since start: 18,432 prompt, 51,200 generated",
    ]


def test_vllm_v0_figures_use_the_older_kv_cache_name() -> None:
    figures = parse_figures((DATA / "metrics_v0.txt").read_text())
    assert figures == ServerFigures(
        running=1, waiting=0, kv_cache_usage=0.05, prompt_tokens=120, generation_tokens=800
    )


def test_data_parallel_engines_are_summed_and_the_fullest_cache_shown() -> None:
    lines = []
    for line in (DATA / "metrics_v1.txt").read_text().splitlines():
        lines.append(line)
        if 'engine="0"' in line:  # engine 1 of two, in the same families (one HELP and TYPE each)
            lines.append(line.replace('engine="0"', 'engine="1"').replace("0.4125", "0.9"))
    figures = parse_figures("\n".join(lines) + "\n")
    assert figures is not None and figures.running == 6 and figures.kv_cache_usage == 0.9
    assert figures.generation_tokens == 102400


def test_an_exposition_without_vllm_figures_has_none_and_garbage_is_an_error() -> None:
    assert parse_figures("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.5\n") is None
    assert figure_lines(None) == [NO_FIGURES]
    with pytest.raises(FiguresError, match="not Prometheus text"):
        parse_figures("<html>hello</html>\n")


@pytest.fixture
def metrics_server() -> Iterator[str]:
    """A loopback HTTP server that serves the golden vLLM text on /metrics, as vLLM does."""
    body = (DATA / "metrics_v1.txt").read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body if self.path == "/metrics" else b"")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_fetch_reads_a_servers_metrics_and_says_when_it_cannot(metrics_server: str) -> None:
    figures = fetch_figures(metrics_server + "/v1")
    assert figures is not None and figures.running == 3
    with pytest.raises(FiguresError, match=r"Cannot reach http://127.0.0.1:\d+/metrics"):
        fetch_figures(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(FiguresError, match="not an http"):
        fetch_figures("ftp://host")


def test_transformers_serve_exports_no_metrics(server: Server) -> None:
    assert fetch_figures(server.url) is None
    assert figure_lines(fetch_figures(server.url)) == [NO_FIGURES]


def test_the_golden_texts_name_their_source() -> None:
    readme = (DATA / "README.md").read_text()
    assert all(path.name in readme for path in DATA.glob("*.txt"))


def test_a_served_jobs_details_show_its_figures_once_ready(metrics_server: str, tmp_path: Path) -> None:
    """The job's details (the Training screen's, off the UI thread) ask a ready server for its figures."""
    info = {"url": metrics_server, "model": "m", "engine": "vllm", "api_key_env": "", "ready": False}
    ready.write(tmp_path, {**info, "ready_at": None})
    assert job_figure_lines(tmp_path) == []  # warming up: nothing asked
    ready.write(tmp_path, {**info, "ready": True, "ready_at": 1.0})
    lines = job_figure_lines(tmp_path)
    assert (
        lines[0] == "server   requests: 3 running, 2 waiting" and lines[1] == "server   KV cache: 41.2% used"
    )
    ready.write(tmp_path, {**info, "url": f"http://127.0.0.1:{free_port()}", "ready": True, "ready_at": 1.0})
    assert job_figure_lines(tmp_path)[0].startswith("server   Cannot reach http://127.0.0.1:")
