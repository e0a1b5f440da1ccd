"""`<run>/serve.json`, what a serve job says about its server, and the readiness watch that fills it.

serve.json = {"url": "http://HOST:PORT", "model": the id the server answers to, "engine": "vllm" or
"transformers", "api_key_env": the variable's name or "", "ready": bool, "ready_at": epoch or null}
(written atomically; Chat lists served jobs from it), plus "warmup": vLLM's warm-up in words while it
warms up (`warmup.py`, read from the log as it grows). It never holds the key itself. Ready: GET
/health answers 200, then GET /v1/models lists the model (each request bounded by REQUEST_S).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gaudi_tui.core.http_get import GetError, get
from gaudi_tui.core.serve.warmup import WarmupReader
from gaudi_tui.core.untrusted.files import AppendReader, write_atomic

SERVE_FILE = "serve.json"
REQUEST_S = 2.0
POLL_S = 0.5
MAX_READ = 1 << 20
"""Log bytes read per poll."""
MAX_ANSWER = 1 << 20
"""The most of a /health or /v1/models answer read."""
KEYS = ("url", "model", "engine", "api_key_env", "ready", "ready_at")


def url_of(host: str, port: int) -> str:
    """The address a client uses: a server on every network (0.0.0.0, ::) is reached on loopback here."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"


def write(run_path: Path, info: Mapping[str, Any]) -> None:
    write_atomic(run_path / SERVE_FILE, json.dumps(dict(info), indent=1) + "\n")


def read(run_path: Path) -> dict[str, Any] | None:
    """serve.json, or None when there is none or it cannot be read."""
    try:
        data = json.loads((run_path / SERVE_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) and all(k in data for k in KEYS) else None


def probe(url: str, model: str, api_key: str | None = None) -> bool:
    """The server answers /health and lists `model` on /v1/models."""
    try:
        if get(url + "/health", timeout=REQUEST_S, api_key=api_key, max_bytes=MAX_ANSWER).status != 200:
            return False
        answer = get(url + "/v1/models", timeout=REQUEST_S, api_key=api_key, max_bytes=MAX_ANSWER)
        listed = json.loads(answer.body).get("data", []) if answer.status == 200 else []
    except (GetError, ValueError, AttributeError):
        return False
    return isinstance(listed, list) and any(isinstance(m, dict) and m.get("id") == model for m in listed)


class ReadyWatch:
    """A thread that follows the server's log for its warm-up and probes it until it is ready (then
    writes serve.json once more) or `close` is called. With `locate` (a server on a cluster node)
    it goes on watching where the server is: one that moved (a Slurm requeue: another node or port,
    or a new start) is not ready until its new address answers."""

    def __init__(
        self,
        run_path: Path,
        log: Path,
        info: dict[str, Any],
        api_key: str | None,
        locate: Callable[[], Mapping[str, str] | None] | None = None,
    ) -> None:
        """`locate`: where the url is known only once the server chose it on its node (`info`'s
        url empty until then; `node.py`): the url and model when known (and what else tells one
        start of the server from the next), else None."""
        self.run_path = run_path
        self.locate = locate
        self.located: Mapping[str, str] | None = None
        self.log = log
        self.info = dict(info, ready=False, ready_at=None, warmup="")
        self.warmup = WarmupReader()
        self._api_key = api_key
        self.reader = AppendReader(log)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="serve-ready", daemon=True)

    def start(self) -> None:
        try:
            self.reader.offset = self.log.stat().st_size  # this attempt's output only
        except OSError:
            self.reader.offset = 0
        write(self.run_path, self.info)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            if self.follow(time.time()):
                write(self.run_path, self.info)
            if self.locate is not None and self.relocated():
                write(self.run_path, self.info)
            if not self.info["url"] or self.info["ready"]:
                continue
            if probe(self.info["url"], self.info["model"], self._api_key):
                self.info.update(ready=True, ready_at=time.time())
                write(self.run_path, self.info)
                if self.locate is None:
                    return

    def relocated(self) -> bool:
        """True when the node says the server is somewhere new (or started anew): not ready there
        yet, its warm-up to come. A file that cannot be read (or an older attempt's) changes nothing."""
        found = self.locate() if self.locate is not None else None
        if found is None or found == self.located:
            return False
        self.located = found
        self.warmup = WarmupReader()
        self.info.update(url=found["url"], model=found["model"], ready=False, ready_at=None, warmup="")
        return True

    def follow(self, now: float) -> bool:
        """Read what the log gained (bounded); True when the warm-up words changed."""
        lines, _ = self.reader.read_lines(at_most=MAX_READ)
        changed = False
        for line in lines:
            changed |= self.warmup.feed(line, now)
        words = self.warmup.state.words()
        if changed and words != self.info["warmup"]:
            self.info["warmup"] = words
            return True
        return False

    def close(self) -> None:
        """The server ended: not ready any more."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=REQUEST_S * 3)
        write(self.run_path, dict(self.info, ready=False))


def note(run_path: Path) -> str:
    """The job list's words for a serve job: ready at its address, warming up, or starting."""
    info = read(run_path)
    if info is None:
        return ""
    if info.get("ready"):
        return f"ready: {info['url']} ({info['engine']})"
    where = f"on {info['url']}" if info["url"] else "(its node chooses the address)"
    return str(info.get("warmup") or "") or f"starting {info['engine']} serve {where}"
