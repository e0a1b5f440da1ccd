"""A small client for Prometheus's HTTP API (instant and range queries), on the panel's bounded
HTTP client (`core/untrusted/http.py`; where its URL comes from: `address.prometheus_url()`)."""

from __future__ import annotations

import functools
import http.client
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import repeat
from typing import Any, ParamSpec, TypeVar, cast

from gaudi_tui.core.fleet.samples import CardValue, Sample
from gaudi_tui.core.untrusted import http as bounded
from gaudi_tui.core.untrusted import vector
from gaudi_tui.core.untrusted.data import Untrusted, loads

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
_new = tuple.__new__
MAX_ANSWER = 32 << 20
"""The most of one answer read: 4,096 cards' values are ~3 MB, an hour's range of them at 30 s ~20 MB."""
AT_ONCE = 20
"""Queries `fetch.ask` runs at once (a refresh of the Fleet screen asks 17 or 18), each on its own
kept-alive connection: a remote Prometheus answers them in parallel."""


class PrometheusError(Exception):
    """Prometheus could not be asked or gave no usable answer; the message says which and what to do."""


def _shaped(method: Callable[P, R]) -> Callable[P, R]:
    """`method`, where an answer of another shape than Prometheus's (a field missing, a list for an
    object, a value that is not a number) is a PrometheusError, not a crash of the refresh."""

    @functools.wraps(method)
    def read(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise PrometheusError(
                f"the answer is not shaped like Prometheus's ({type(exc).__name__})"
            ) from None

    return read


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]
    """(unix time, value), oldest first."""


class PrometheusClient:
    """Queries over a few kept-alive HTTP/1.1 connections: each query takes an idle one (or opens
    one) and gives it back, so a refresh's ~17 queries open no connection once warm. A kept
    connection that Prometheus closed meanwhile (idle timeout, restart) is dropped with the other idle
    ones and the query is sent once more on a new one. `timeout` bounds each whole call (connect,
    send, status line, headers, every read), not each socket operation, and an answer past
    MAX_ANSWER is an error. `http://user:password@host` sends Basic authentication, to that origin
    only; the password is never part of `url` (what messages and the screen show).
    `http_proxy`/`https_proxy`/`no_proxy` are honoured as urllib does (https through CONNECT), except
    for a Prometheus on loopback (an SSH tunnel), which no proxy can reach."""

    KEEP = AT_ONCE
    """Idle connections kept at most: one per query `fetch.ask` runs at once."""
    KEEP_READ = 64
    """Queries whose last answer `pair_values` (and `query`) keeps (the per-card ones change as rows
    scroll)."""

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise PrometheusError(f"{url!r} is not an http:// or https:// URL of a Prometheus server")
        parts = urllib.parse.urlsplit(url.rstrip("/"))
        try:
            port = parts.port
        except ValueError:
            raise PrometheusError(f"{_without_userinfo(parts)!r}: the port is not a number") from None
        self.url = _without_userinfo(parts)
        self.timeout = timeout
        self._origin = bounded.Origin(
            parts.scheme, (parts.hostname or "").lower(), port or (443 if parts.scheme == "https" else 80)
        )
        self._prefix = parts.path
        self._headers = {"Accept": "application/json"}
        self._credential = None
        if parts.username is not None:
            user, password = urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or "")
            self._credential = bounded.Credential(
                self._origin, "Authorization", bounded.Credential.basic_value(user, password)
            )
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self.opened = 0
        """Connections opened so far (tests, the bench)."""
        self._read: dict[tuple[str, ...], tuple[bytes, bytes, Any]] = {}
        """The last answer to each query of `query`, `pair_values` and `keyed_values`, its evaluation
        time as written in it (`_stamp`) and what was read from it: an answer that did not change is
        not read again."""

    def close(self) -> None:
        """Close the idle connections (one in use is kept until its query ends)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _get(self, path: str, params: dict[str, str]) -> Any:
        return self._data(self._body(path, params))

    def _body(self, path: str, params: dict[str, str]) -> bytes:
        url = f"{self._origin.scheme}://{self._origin.netloc}{self._prefix}{path}?{urllib.parse.urlencode(params)}"
        deadline = time.monotonic() + self.timeout
        connection, reused = self._connection()
        try:
            try:
                answer = self._exchange(connection, url, deadline)
            except (ConnectionError, http.client.BadStatusLine):
                if not reused:
                    raise
                connection.close()  # closed by Prometheus while idle: so are the others
                self.close()
                connection, _ = self._connection()
                answer = self._exchange(connection, url, deadline)
        except (OSError, http.client.HTTPException, bounded.HttpError) as error:
            connection.close()
            if isinstance(error, TimeoutError):
                reason = f"timed out after {self.timeout:g} s"
            else:
                reason = error.reason if isinstance(error, bounded.HttpError) else bounded.why(error)
            raise PrometheusError(
                f"Prometheus unreachable at {self.url} ({reason}); check the URL or the SSH tunnel"
            ) from None
        status, reason, location, body, keep = answer
        if keep:
            self._give_back(connection)
        else:
            connection.close()
        if 300 <= status < 400:
            raise PrometheusError(
                f"Prometheus at {self.url} answered HTTP {status} (moved to {location or 'nowhere said'}): "
                "give that URL"
            )
        if status >= 400:
            detail = _error_text(body) or reason
            raise PrometheusError(f"Prometheus at {self.url} answered HTTP {status}: {detail}")
        return body

    def _exchange(self, connection: http.client.HTTPConnection, url: str, deadline: float) -> Answer:
        """One GET on `connection`, done by `deadline` (monotonic time)."""
        response = bounded.send(
            connection, "GET", url, deadline=deadline, headers=self._headers, credential=self._credential
        )
        try:
            body = response.read(MAX_ANSWER)
        except bounded.HttpError:
            response.close()  # the answer's socket too, which a connection that will close does not keep
            raise
        return response.status, response.reason, response.header("Location"), body, response.reusable

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """An idle connection (True: reused) or a new one, not yet connected."""
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
            self.opened += 1
        return bounded.connection(self._origin, self.timeout), False

    def _give_back(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self.KEEP:
                self._idle.append(connection)
                return
        connection.close()

    def _data(self, body: bytes) -> Any:
        try:
            document = loads(body, what="the answer")
        except Untrusted as exc:
            raise PrometheusError(f"{self.url} did not answer like Prometheus ({exc})") from None
        if not isinstance(document, dict) or document.get("status") != "success":
            raise PrometheusError(f"Prometheus query failed: {_error_text(body) or 'no reason given'}")
        return document.get("data") or {}

    def query(self, promql: str, at: float | None = None) -> list[Sample]:
        """An instant query; the answer must be a vector. An answer that did not change (but for its
        evaluation time) gives the last reading of it again, as `pair_values` does."""
        return list(self._kept(promql, ("samples",), at, lambda body: self._samples(body, promql)))

    @_shaped
    def _samples(self, body: bytes, promql: str) -> list[Sample]:
        data = self._data(body)
        if data.get("resultType") != "vector":
            raise PrometheusError(f"{promql!r} gave a {data.get('resultType')}, not a vector")
        return list(map(_new, repeat(Sample), vector.results(data.get("result", []))))

    def card_values(self, promql: str, at: float | None = None) -> list[CardValue]:
        """An instant query of the form `… by (instance, id) (…)`, read straight from the answer's
        bytes: a refresh of 4,096 cards gets ~30,000 values, and building JSON objects for them was
        most of its cost. An answer of any other shape (a series without `id`, an error) is decoded
        as JSON; series without `instance` or `id` are left out."""
        return self.pair_values(promql, "instance", "id", at)

    def pair_values(self, promql: str, one: str, other: str, at: float | None = None) -> list[CardValue]:
        """(`one`, `other`, value) of each result of a `… by (one, other)` query, read from the bytes as
        `card_values` does (JSON for any other shape; series lacking either label left out)."""
        read = self._kept(promql, (one, other), at, lambda body: self._pair_values(body, promql, one, other))
        return list(read)  # the same answer as last time (up, card counts...): the same reading

    def keyed_values(
        self, promql: str, key: str, other: str, at: float | None = None
    ) -> Mapping[bytes, bytes]:
        """Each result's `key` label → its value, of a `… by (key, other)` query, as the answer's
        bytes (`vector.keyed`: a host's free cards at 2,048 hosts, read with no step per host). The
        same mapping again while the answer stays the same: not to be changed."""
        return self._kept(
            promql, (key, other, "keyed"), at, lambda body: self._keyed_values(body, key, other)
        )

    def _kept(self, promql: str, how: tuple[str, ...], at: float | None, read: Callable[[bytes], T]) -> T:
        """`read` of the answer to `promql`, or its last reading when the answer did not change but
        for its evaluation time."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        body = self._body("/api/v1/query", params)
        key = (promql, *how)
        stamp = _stamp(body)
        kept = self._read.get(key)
        if kept is not None and _same_but_time(body, stamp, kept[0], kept[1]):
            return cast(T, kept[2])
        found = read(body)
        with self._lock:
            self._read[key] = (body, stamp, found)
            while len(self._read) > self.KEEP_READ:
                del self._read[next(iter(self._read))]
        return found

    @_shaped
    def _keyed_values(self, body: bytes, key: str, other: str) -> dict[bytes, bytes]:
        try:
            scanned = vector.keyed(body, key, other)
        except Untrusted as exc:
            raise PrometheusError(f"{self.url} did not answer like Prometheus ({exc})") from None
        if scanned is not None:
            return scanned
        data = self._data(body)
        if data.get("resultType") != "vector":
            raise PrometheusError(f"the answer is a {data.get('resultType')}, not a vector")
        return {
            labels[key].encode(): repr(number).encode()
            for labels, number in vector.results(data.get("result", []))
            if key in labels
        }

    @_shaped
    def _pair_values(self, body: bytes, promql: str, one: str, other: str) -> list[CardValue]:
        try:
            scanned = vector.pairs(body, one, other)
        except Untrusted as exc:
            raise PrometheusError(f"{self.url} did not answer like Prometheus ({exc})") from None
        if scanned is not None:
            return scanned.values
        data = self._data(body)
        if data.get("resultType") != "vector":
            raise PrometheusError(f"{promql!r} gave a {data.get('resultType')}, not a vector")
        return [
            (labels[one], labels[other], number)
            for labels, number in vector.results(data.get("result", []))
            if one in labels and other in labels
        ]

    def label_values(self, label: str, match: str, start: float, end: float) -> list[str]:
        """The values `label` takes on the series `match` selects between `start` and `end` (an index
        lookup: no sample is read)."""
        params = {"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"}
        data = self._get(f"/api/v1/label/{urllib.parse.quote(label)}/values", params)
        if not isinstance(data, list):
            raise PrometheusError(f"{self.url} gave no list of {label} values")
        return [str(value) for value in data]

    @_shaped
    def query_range(self, promql: str, start: float, end: float, step: float) -> list[Series]:
        params = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        data = self._get("/api/v1/query_range", params)
        return [
            Series(item["metric"], tuple((float(t), float(v)) for t, v in item.get("values", [])))
            for item in data.get("result", [])
        ]


Answer = tuple[int, str, str | None, bytes, bool]
"""HTTP status, reason, Location header, body, and whether the connection can be kept."""


def _stamp(body: bytes) -> bytes:
    """The evaluation time as an instant query's answer writes it in each result (`"value":[time,`),
    or nothing (no result)."""
    start = body.find(b'"value":[')
    end = body.find(b",", start)
    return body[start + 8 : end + 1] if 0 <= start < end else b""


def _same_but_time(body: bytes, stamp: bytes, kept: bytes, kept_stamp: bytes) -> bool:
    """`body` is `kept` but for its evaluation time. Told from the lengths where they differ by more
    than the times do (a changed answer then costs no copy of it), else with `kept`'s times made
    `body`'s."""
    if len(stamp) == len(kept_stamp) and len(body) != len(kept):
        return False
    return body == (kept.replace(kept_stamp, stamp) if kept_stamp and stamp != kept_stamp else kept)


def _without_userinfo(parts: urllib.parse.SplitResult) -> str:
    netloc = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{netloc}{parts.path}"


def _error_text(body: bytes) -> str | None:
    try:
        document = loads(body, what="the error")
    except Untrusted:
        return None
    return str(document.get("error")) if isinstance(document, dict) and document.get("error") else None
