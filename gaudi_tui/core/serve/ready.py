"""`<run>/serve.json`, what a serve job says about its server, and the readiness watch that fills it.

serve.json = {"url": "http://HOST:PORT", "model": the id the server answers to, "engine": "vllm" or
"transformers", "api_key_env": the variable's name or "", "ready": bool, "ready_at": epoch or null}
(written atomically; Chat lists served jobs from it), plus "warmup": vLLM's warm-up in words while it
warms up (`warmup.py`, read from the log as it grows). It never holds the key itself. Ready: GET
/health answers 200 (asked without the key: vLLM does not check it there), then GET /v1/models lists
the model; the key goes only there, and for a server on this host only once the port's listener is
the server's own process (another user's process may hold the port before vLLM binds it). Each
request goes through the bounded client (`core/untrusted/http.py`: REQUEST_S for the whole exchange,
never through a proxy: the server is the job's own node), its JSON through the untrusted reader.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil

from gaudi_tui.core.serve.warmup import WarmupReader
from gaudi_tui.core.untrusted import http
from gaudi_tui.core.untrusted.data import Untrusted, loads
from gaudi_tui.core.untrusted.files import AppendReader, load_json, write_atomic

SERVE_FILE = "serve.json"
REQUEST_S = 2.0
POLL_S = 0.5
MAX_READ = 1 << 20
"""Log bytes read per poll."""
MAX_ANSWER = 1 << 20
"""The most of a /health or /v1/models answer read."""
KEYS = ("url", "model", "engine", "api_key_env", "ready", "ready_at")

log = logging.getLogger(__name__)


def url_of(host: str, port: int) -> str:
    """The address a client uses: a server on every network (0.0.0.0, ::) is reached on loopback here."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"


def write(run_path: Path, info: Mapping[str, Any]) -> None:
    write_atomic(run_path / SERVE_FILE, json.dumps(dict(info), indent=1) + "\n")


def read(run_path: Path) -> dict[str, Any] | None:
    """serve.json, or None when there is none or it cannot be read."""
    try:  # the serving job wrote it: read as untrusted.data reads, bounded
        data = load_json(run_path / SERVE_FILE)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and all(k in data for k in KEYS) else None


def probe(
    url: str, model: str, api_key: str | None = None, owned: Callable[[int], bool] | None = None
) -> bool:
    """The server answers /health and lists `model` on /v1/models. With `api_key`, `owned` (a port
    -> is its listener the server's own process) must say yes before the key is sent."""
    try:
        if http.get(url + "/health", timeout=REQUEST_S, direct=True, max_body=MAX_ANSWER).status != 200:
            return False
        credential = None
        if api_key:
            if owned is not None and not owned(http.Origin.of(url).port):
                return False
            credential = http.Credential.bearer(url, api_key)
        answer = http.get(
            url + "/v1/models", timeout=REQUEST_S, credential=credential, direct=True, max_body=MAX_ANSWER
        )
        document = loads(answer.body, what="/v1/models") if answer.status == 200 else {}
    except (http.HttpError, Untrusted):
        return False
    listed = document.get("data", []) if isinstance(document, dict) else []
    return isinstance(listed, list) and any(isinstance(m, dict) and m.get("id") == model for m in listed)


def listens(pid: int, port: int) -> bool:
    """`pid` or one of its descendants listens on TCP `port` (psutil; the panel's own user's processes)."""
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return False
    for proc in tree:
        try:
            sockets = proc.net_connections(kind="inet")
        except psutil.Error:
            continue
        if any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in sockets):
            return True
    return False


def is_local(url: str) -> bool:
    """The server's host is this one: a loopback address (`url_of` asks a server on every network so)."""
    return http.is_loopback(urlsplit(url).hostname or "")


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
        self.server_pid: int | None = None
        """The local server's process (its supervisor sets it once started): the key waits for it."""
        self._failed = ""
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
            try:
                if self.step():
                    return
            except Exception as exc:  # one bad poll never ends the watch: the server may still become ready
                if str(exc) != self._failed:
                    self._failed = str(exc)
                    log.exception("the readiness watch's poll failed; it goes on")

    def step(self) -> bool:
        """One poll: the log's warm-up words, where the server is, whether it answers; True when the
        watch is done (a local server is ready)."""
        if self.follow(time.time()):
            write(self.run_path, self.info)
        if self.locate is not None and self.relocated():
            write(self.run_path, self.info)
        if not self.info["url"] or self.info["ready"]:
            return False
        if probe(self.info["url"], self.info["model"], self._api_key, self._owned):
            now_ready = dict(self.info, ready=True, ready_at=time.time())
            write(self.run_path, now_ready)  # ready once serve.json says so: a failed write probes again
            self.info = now_ready
            return self.locate is None
        return False

    def _owned(self, port: int) -> bool:
        """The key may go to the listener on `port`: the server's own process on this host (a
        server on a cluster node, where no process of it can be read here, is asked as it is)."""
        if not is_local(self.info["url"]):
            return True
        return self.server_pid is not None and listens(self.server_pid, port)

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
