"""One bounded HTTP GET: the serve code's readiness probe (/health, /v1/models) and a server's own
figures (/metrics), and the Ray target's dashboard REST API (`targets/ray/nodes.get_json`).

Bounded in time (each wait by `timeout`, the whole answer by a deadline of `timeout` checked between
reads) and in size (more than `max_bytes` of body is an error, not a silent cut). A loopback server
is asked directly: a proxy from `$http_proxy` cannot reach this host's loopback; another host goes
through the environment's proxies, as urllib does. Redirects are not followed (a key is never sent
to another address). Any other status is the caller's to judge; every failure is a GetError in words
(its `reason` says why without the URL, for a caller that words its own message).
"""

from __future__ import annotations

import http.client
import ipaddress
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_BODY = 4 << 20
_CHUNK = 64 << 10


class GetError(Exception):
    """The server could not be asked, did not answer in time, or answered too much."""

    def __init__(self, url: str, reason: str, message: str | None = None) -> None:
        super().__init__(message or f"{url} {reason}")
        self.reason = reason


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    body: bytes


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # the 3xx comes back as an HTTPError, so as the answer


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def get(url: str, *, timeout: float, api_key: str | None = None, max_bytes: int = MAX_BODY) -> Answer:
    """GET `url` (http or https): its status and body, whatever the status."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise GetError(url, "is not an http(s) URL", f"{url!r} is not an http(s) URL")
    proxies = urllib.request.ProxyHandler({} if is_loopback(parts.hostname) else None)
    opener = urllib.request.build_opener(proxies, _NoRedirect())
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    deadline = time.monotonic() + timeout
    try:
        try:
            response = opener.open(request, timeout=timeout)
        except urllib.error.HTTPError as exc:
            with exc:
                body = (
                    _read(exc.fp, url, deadline, timeout, max_bytes)
                    if isinstance(exc.fp, http.client.HTTPResponse)
                    else b""
                )
                return Answer(exc.code, str(exc.reason), body)
        with response:
            return Answer(
                response.status, response.reason, _read(response, url, deadline, timeout, max_bytes)
            )
    except TimeoutError:
        raise _late(url, timeout) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise _late(url, timeout) from None
        raise _unreachable(url, exc.reason) from None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise _unreachable(url, exc or type(exc).__name__) from None


def _late(url: str, timeout: float) -> GetError:
    return GetError(url, f"did not answer within {timeout:g} s")


def _unreachable(url: str, why: object) -> GetError:
    return GetError(url, str(why), f"Cannot reach {url}: {why}")


def _read(
    response: http.client.HTTPResponse, url: str, deadline: float, timeout: float, max_bytes: int
) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = response.read1(_CHUNK)  # what one wait brought: a server that drips meets the deadline
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise GetError(url, f"answered more than {max_bytes:,} bytes")
        if time.monotonic() > deadline:
            raise _late(url, timeout)
        chunks.append(chunk)
