"""A real OpenAI-compatible server for the endpoint tests: `transformers serve` (Transformers' own,
the `serving` extra: fastapi, uvicorn) with the demo model on CPU, on a free loopback port.

The model served is a copy of the demo model whose generation_config.json asks for at least
100,000 new tokens: every answer then runs to the request's max_tokens (the demo model otherwise
ends most answers after ~25 tokens, too soon to stop one or kill the server mid-answer)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests import required

START_TIMEOUT_S = 120.0
"""`transformers serve` answers /health within seconds here; a loaded 2-core host may take longer."""


def serving_installed() -> None:
    """The serving extra is installed (or the test skips; under CI it fails: tests/required.py)."""
    for name in ("fastapi", "uvicorn"):
        required.module(name, "serving", "the serving extra is missing: pip install 'transformers[serving]'")
    if not transformers_cli().is_file():
        required.require("serving", f"no transformers command at {transformers_cli()}")


def transformers_cli() -> Path:
    return Path(sys.executable).parent / "transformers"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def long_answer_model(demo: Path, folder: Path) -> Path:
    """A copy of the demo model that answers until max_tokens."""
    model = folder / "demo-long"
    shutil.copytree(demo, model)
    config = model / "generation_config.json"
    data = json.loads(config.read_text())
    data["min_new_tokens"] = 100_000
    config.write_text(json.dumps(data))
    return model


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    model: str
    log: Path

    def kill(self) -> None:
        """SIGKILL by PID, as a crash would end it."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def start_server(model: Path, log: Path) -> Server:
    """`transformers serve MODEL` on a free port; returns once /health answers ok."""
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(transformers_cli()), "serve", str(model), "--host", "127.0.0.1", "--port", str(port)]
            + ["--device", "cpu"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
    server = Server(proc, f"http://127.0.0.1:{port}", str(model), log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"transformers serve exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(server.url + "/health", timeout=2) as response:
                if json.loads(response.read()).get("status") == "ok":
                    return server
        except OSError:
            pass
        time.sleep(0.2)  # polling for the state: /health answering ok
    server.stop()
    raise RuntimeError(f"transformers serve did not answer /health within {START_TIMEOUT_S:g} s")
