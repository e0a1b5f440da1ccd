"""One bounded HTTP/1.1 client for every request the panel makes: Prometheus, the Ray dashboard,
serve readiness, OpenAI endpoints (SSE streams: `sse.py`), a server's `/metrics` and webhooks.

Built on the standard library's `http.client` (its status-line, header and chunked parsing, kept
by CPython) over a socket whose every send and receive is given what is left of one deadline for
the whole exchange: connect, status line, headers and body (a server that drips its headers meets
it). No third-party client is a dependency of the panel (httpx, urllib3 and requests are only in
the venv through other packages), and none bounds the header read by a deadline: urllib3 and httpx
give per-read timeouts, which a byte every second defeats.

What else it holds to:
- caps: the status line and headers together (`MAX_HEAD`), the body (`max_body`; more is an error
  saying so, never a silent cut), each line a caller reads (`Response.lines`);
- no proxy for loopback nor for a host the caller says is a job's own node (`direct=True`); any
  other host goes through `$http_proxy`/`$https_proxy` as urllib does (https by CONNECT);
- no redirect is ever followed (the 3xx is the caller's answer), so none carries a credential;
- a `Credential` is sent only to the origin (scheme, host, port) it was named for: asking any
  other origin with it is an HttpError, and nothing is sent.
Every failure is an HttpError whose `reason` says why without the URL (a URL may hold a token).
"""

from __future__ import annotations

import base64
import http.client
import ipaddress
import math
import socket
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gaudi_tui.core.untrusted.deadline_socket import MAX_HEAD, Bounded, Connection, TLSConnection, left

MAX_BODY = 4 << 20
"""A body's default cap."""
MAX_LINE = 1 << 20
"""A line's default cap (`Response.lines`)."""


class HttpError(Exception):
    """The server could not be asked, did not answer in time, or answered too much or not HTTP."""

    def __init__(self, url: str, reason: str, message: str | None = None, late: bool = False) -> None:
        super().__init__(message or f"{url} {reason}")
        self.url = url
        self.reason = reason
        self.late = late
        """The deadline passed (rather than a refusal, a break or too much)."""


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> Origin:
        """The origin of `url`; raises HttpError for one that is not http(s)."""
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise HttpError(_shown(url), f"is not a URL ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HttpError(_shown(url), "is not an http(s) URL")
        return cls(parts.scheme, parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80))

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class Credential:
    """A header that proves who asks (a bearer key, Basic auth), for one origin only."""

    origin: Origin
    header: str
    value: str = field(repr=False)

    @classmethod
    def bearer(cls, url: str, key: str) -> Credential:
        return cls(Origin.of(url), "Authorization", f"Bearer {key}")

    @staticmethod
    def basic_value(user: str, password: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    body: bytes
    location: str | None = None


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def proxy_for(origin: Origin, direct: bool = False) -> str | None:
    """The proxy urllib would use for `origin` (from `<scheme>_proxy` and `no_proxy`), or None: never
    for loopback, nor when the caller asks a job's own node (`direct`)."""
    if direct or is_loopback(origin.host):
        return None
    proxy = urllib.request.getproxies().get(origin.scheme)
    if not proxy or urllib.request.proxy_bypass(origin.host):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def connection(origin: Origin, timeout: float, direct: bool = False) -> http.client.HTTPConnection:
    """A new (not yet connected) connection to `origin`, through the proxy `proxy_for` names."""
    proxy = proxy_for(origin, direct)
    if proxy is None:
        kind = TLSConnection if origin.scheme == "https" else Connection
        return kind(origin.host, origin.port, timeout=timeout)
    parts = urllib.parse.urlsplit(proxy)
    auth = {}
    if parts.username is not None:
        user, password = urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or "")
        auth["Proxy-Authorization"] = Credential.basic_value(user, password)
    if origin.scheme == "https":  # a CONNECT tunnel through the proxy, as urllib makes
        tunnel = TLSConnection(parts.hostname or "", parts.port, timeout=timeout)
        tunnel.set_tunnel(origin.host, origin.port, headers=auth)
        return tunnel
    plain = Connection(parts.hostname or "", parts.port, timeout=timeout)
    plain.via_proxy = auth  # type: ignore[attr-defined]
    return plain


def target_of(conn: http.client.HTTPConnection, origin: Origin, path: str) -> str:
    """The request target: the path, or the whole URL for a plain proxy."""
    if getattr(conn, "via_proxy", None) is None:
        return path
    return f"http://{origin.netloc}{path}"


# ---- one exchange ---------------------------------------------------------------------------------


class Response:
    """An answer whose status and headers are read; its body is read within the same deadline."""

    def __init__(self, url: str, conn: http.client.HTTPConnection, raw: http.client.HTTPResponse) -> None:
        self.url = url
        self.conn = conn
        self.raw = raw
        self.status = raw.status
        self.reason = raw.reason
        self.timeout: float | None = None
        """The whole exchange's bound, for the words of a late answer."""

    def header(self, name: str) -> str | None:
        return self.raw.getheader(name)

    def read(self, max_body: int = MAX_BODY) -> bytes:
        """The whole body; more than `max_body` bytes is an HttpError saying so. One read of at most
        one byte past the cap (http.client joins a chunked body's chunks itself; a chunked body cut
        short is its IncompleteRead)."""
        body = self._guard(self.raw.read, max_body + 1)
        if len(body) > max_body:
            raise HttpError(self.url, f"answered more than {max_body:,} bytes")
        if self.raw.length:  # http.client's read(amt) says nothing of a body cut short
            raise HttpError(self.url, f"broke off its answer ({self.raw.length:,} bytes missing)")
        if not self.raw.isclosed() and self._guard(self.raw.read, 1):  # a body without a length
            raise HttpError(self.url, f"answered more than {max_body:,} bytes")
        return body

    def lines(self, max_line: int = MAX_LINE) -> Iterator[bytes]:
        """The body's lines (ending "\\n", "\\r\\n" or the end), each without its end; a line longer
        than `max_line` bytes is an HttpError."""
        while True:
            line = self._guard(self.raw.readline, max_line + 1)
            if not line:
                return
            if not line.endswith(b"\n") and len(line) > max_line:
                raise HttpError(self.url, f"sent a line longer than {max_line:,} bytes")
            yield line.rstrip(b"\n").removesuffix(b"\r")

    def _guard(self, read: Any, size: int) -> bytes:
        try:
            return bytes(read(size))
        except TimeoutError:
            late = (
                "did not finish its answer in time"
                if self.timeout is None
                else f"did not answer within {self.timeout:g} s"
            )
            raise HttpError(self.url, late, late=True) from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise HttpError(self.url, f"broke off its answer ({why(exc)})") from None

    @property
    def reusable(self) -> bool:
        return not self.raw.will_close

    def abort(self) -> None:
        abort(self.conn)

    def close(self) -> None:
        self.raw.close()
        self.conn.close()

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def abort(conn: http.client.HTTPConnection) -> None:
    """End `conn`'s exchange now, from any thread (a wait in progress ends in an HttpError)."""
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed


def send(
    conn: http.client.HTTPConnection,
    method: str,
    url: str,
    *,
    deadline: float,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    credential: Credential | None = None,
    idle: float = math.inf,
) -> Response:
    """Send one request on `conn` (connected here if it is not) and read its status and headers, all
    by `deadline` (monotonic time). Raises HttpError, or OSError/HTTPException for a kept connection
    that the server closed meanwhile (the caller's to retry on a new one)."""
    origin = Origin.of(url)
    parts = urllib.parse.urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sent = dict(headers or {})
    sent.setdefault("User-Agent", "gaudi-tui")
    sent.update(getattr(conn, "via_proxy", None) or {})
    if credential is not None:
        if credential.origin != origin:
            raise HttpError(
                _shown(url),
                f"is not {credential.origin.scheme}://{credential.origin.netloc}, the server the key "
                "was named for: the key is not sent (nothing was)",
            )
        sent[credential.header] = credential.value
    if conn.sock is None:
        conn.timeout = left(deadline)
        conn.connect()
    bounded = conn.sock
    assert isinstance(bounded, Bounded)  # made by Connection/TLSConnection.connect
    bounded.deadline, bounded.idle, bounded.head_left = deadline, idle, MAX_HEAD
    conn.request(method, target_of(conn, origin, path), body=body, headers=sent)
    raw = conn.getresponse()
    bounded.head_left = None
    return Response(_shown(url), conn, raw)


def begin(
    method: str,
    url: str,
    *,
    timeout: float,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    credential: Credential | None = None,
    direct: bool = False,
    idle: float = math.inf,
    conn: http.client.HTTPConnection | None = None,
) -> Response:
    """One request on a new connection (or `conn`, one from `connection` that another thread may
    `abort`), and its answer's status and headers: the body to read, within `timeout` of the start
    for the whole exchange, each wait at most `idle`."""
    deadline = time.monotonic() + timeout
    conn = conn or connection(Origin.of(url), min(timeout, idle), direct)
    try:
        response = send(
            conn, method, url, deadline=deadline, body=body, headers=headers, credential=credential, idle=idle
        )
        response.timeout = timeout
        return response
    except HttpError:
        conn.close()
        raise
    except TimeoutError:
        conn.close()
        raise HttpError(_shown(url), f"did not answer within {timeout:g} s", late=True) from None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        conn.close()
        said = why(exc)
        raise HttpError(_shown(url), said, f"Cannot reach {_shown(url)}: {said}") from None


def request(
    method: str,
    url: str,
    *,
    timeout: float,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    credential: Credential | None = None,
    direct: bool = False,
    max_body: int = MAX_BODY,
) -> Answer:
    """One whole exchange within `timeout`: its status, reason and body, whatever the status (a
    redirect is not followed: its Location comes back)."""
    with begin(
        method, url, timeout=timeout, body=body, headers=headers, credential=credential, direct=direct
    ) as response:
        return Answer(response.status, response.reason, response.read(max_body), response.header("Location"))


def get(url: str, *, timeout: float, credential: Credential | None = None, **kw: Any) -> Answer:
    return request("GET", url, timeout=timeout, credential=credential, **kw)


def why(exc: BaseException) -> str:
    """A connection's failure in a few words."""
    if isinstance(exc, socket.gaierror):
        return f"no such host: {exc.strerror}"
    if isinstance(exc, http.client.BadStatusLine):
        return "its status line is not HTTP"
    if isinstance(exc, http.client.LineTooLong):
        return "a header line too long"
    if isinstance(exc, http.client.InvalidURL | UnicodeError) or type(exc) is ValueError:
        return "the URL is not valid"  # its words would repeat the URL, where a token may sit
    if isinstance(exc, http.client.HTTPException) and str(exc):
        return str(exc)[:120]
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return str(text)[:120]


def _shown(url: str) -> str:
    """`url` without a user or password and without its query (where tokens sit)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "the URL"
    netloc = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{netloc}{parts.path}"
