"""The Hugging Face side: cache space, Hub reachability or offline mode, the token (never shown)."""

from __future__ import annotations

import base64
import os
import socket
import stat
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import ParseResult, unquote, urlparse

from gaudi_tui.core.doctor.context import CheckContext
from gaudi_tui.core.doctor.model import CheckVerdict, fail, ok, warn

GIB = 1 << 30
CACHE_FAIL_GIB = 5
CACHE_WARN_GIB = 30
TRUE = ("1", "true", "yes", "on")
MOVE_CACHE = (
    "Free space, or put the cache on a larger disk: `export HF_HOME=/path/on/large/disk/huggingface`."
)


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def hf_home(env: Mapping[str, str]) -> Path:
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser()
    cache = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else _home(env) / ".cache"
    return cache / "huggingface"


def hub_cache(env: Mapping[str, str]) -> Path:
    """Where downloaded models go, as huggingface_hub decides it."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    return hf_home(env) / "hub"


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def hf_cache_space(ctx: CheckContext) -> CheckVerdict:
    cache = hub_cache(ctx.env)
    where = _existing(cache)
    if not os.access(where, os.W_OK):
        return fail(
            f"the Hugging Face cache {cache} is not writable",
            "Models from the Hub are downloaded into this folder; downloads fail with a permission error.",
            "Point the cache at a folder you own: `export HF_HOME=$HOME/.cache/huggingface`.",
        )
    free = ctx.disk_usage(str(where)).free / GIB
    finding = f"{free:.0f} GiB free for the Hugging Face cache ({cache})"
    sizes = "A 7–8 B model in bf16 takes about 16 GB, a 70 B model about 140 GB."
    if free < CACHE_FAIL_GIB:
        return fail(finding, f"Downloads will fail part-way. {sizes}", MOVE_CACHE)
    if free < CACHE_WARN_GIB:
        return warn(finding, f"Enough for small models only. {sizes}", MOVE_CACHE)
    return ok(finding, sizes)


def hf_hub_reachable(ctx: CheckContext) -> CheckVerdict:
    """Offline mode, or a TCP connection to the Hub; through HTTPS_PROXY, a real CONNECT request asks
    the proxy for a tunnel to the Hub, so the finding says the Hub is reachable only when it is."""
    offline = ctx.env.get("HF_HUB_OFFLINE", "").strip().lower()
    if offline in TRUE:
        return ok(
            f"HF_HUB_OFFLINE={ctx.env['HF_HUB_OFFLINE']}: offline mode, models load from the cache or local folders"
        )
    endpoint = urlparse(ctx.env.get("HF_ENDPOINT") or "https://huggingface.co")
    proxy = (ctx.env.get("HTTPS_PROXY") or ctx.env.get("https_proxy")) if endpoint.scheme == "https" else None
    target = urlparse(proxy) if proxy else endpoint
    host = target.hostname or ""
    port = target.port or (443 if target.scheme == "https" else 80)
    hub_port = endpoint.port or 443
    via = f" (through the proxy {host}:{port})" if proxy else ""
    unreachable = (
        "Loading a Hub id (e.g. Qwen/Qwen3-0.6B) first asks the Hub: without a route each load waits for "
        "the network before falling back to the cache, and models not in the cache fail."
    )
    try:
        with socket.create_connection((host, port), timeout=ctx.connect_timeout) as sock:
            answer = _tunnel(sock, f"{endpoint.hostname}:{hub_port}", target) if proxy else None
    except OSError as exc:
        return warn(
            f"cannot reach {endpoint.hostname}{via}: {exc.strerror or type(exc).__name__}, and HF_HUB_OFFLINE is not set",
            unreachable,
            "export HF_HUB_OFFLINE=1   (cached models and local folders keep working), or set HTTPS_PROXY",
            env_fix={"HF_HUB_OFFLINE": "1"},
        )
    if answer is not None and answer.split(" ")[1:2] != ["200"]:
        return warn(
            f"the proxy {host}:{port} answers but did not open a tunnel to {endpoint.hostname}:{hub_port}: "
            f"{answer or 'no answer'}",
            unreachable,
            "Check HTTPS_PROXY (and its user:password) with your network admin, or "
            "export HF_HUB_OFFLINE=1   (cached models and local folders keep working)",
            env_fix={"HF_HUB_OFFLINE": "1"},
        )
    if proxy:
        return ok(f"{endpoint.hostname} is reachable through the proxy {host}:{port} (it opened a tunnel)")
    return ok(f"{endpoint.hostname} is reachable")


def _tunnel(sock: socket.socket, where: str, proxy: ParseResult) -> str:
    """Ask the proxy for a tunnel to `where` (HTTP CONNECT); its status line, or "" if it said nothing."""
    request = f"CONNECT {where} HTTP/1.1\r\nHost: {where}\r\n"
    if proxy.username:
        secret = f"{unquote(proxy.username)}:{unquote(proxy.password or '')}".encode()
        request += f"Proxy-Authorization: Basic {base64.b64encode(secret).decode()}\r\n"
    sock.sendall((request + "\r\n").encode())
    reply = b""
    while b"\r\n" not in reply and len(reply) < 4096:
        chunk = sock.recv(1024)
        if not chunk:
            break
        reply += chunk
    return reply.split(b"\r\n", 1)[0].decode(errors="replace").strip()


def hf_token(ctx: CheckContext) -> CheckVerdict:
    gated = "Gated models (Llama, Gemma, …) need a token: `hf auth login`, or export HF_TOKEN."
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        if ctx.env.get(name):
            return ok(f"a Hugging Face token is set in {name} (not shown)", gated)
    path = Path(ctx.env["HF_TOKEN_PATH"]) if ctx.env.get("HF_TOKEN_PATH") else hf_home(ctx.env) / "token"
    try:
        info = path.stat()
    except OSError:
        return ok("no Hugging Face token: public models only", gated)
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        return warn(
            f"the token file {path} can be read by other users (mode {stat.S_IMODE(info.st_mode):o})",
            "Anyone on this host who can read the file can use your Hugging Face account.",
            f"chmod 600 {path}",
        )
    return ok(f"a Hugging Face token is stored in {path} (not shown)", gated)
