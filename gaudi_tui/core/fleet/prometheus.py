"""A small client for Prometheus's HTTP API (instant and range queries), on the standard library.

Where the Prometheus URL comes from is `prometheus_url()`: the `--prometheus` option, else the
`cluster.prometheus_url` setting (the `GAUDI_TUI_PROMETHEUS` environment variable, else config.toml).
"""

from __future__ import annotations

import functools
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from gaudi_tui.core import settings
from gaudi_tui.core.fleet.samples import CardValue, Sample

ENV_VAR = "GAUDI_TUI_PROMETHEUS"

_LABEL = rb'"([^"\\]*)"'
"""A label value without escapes (an answer holding a backslash is decoded as JSON)."""


@functools.cache
def _pair_result(first: str, second: str) -> re.Pattern[bytes]:
    """One result of a `… by (first, second)` query as Prometheus writes it: labels in name order
    (`first` < `second`), then `[time, "value"]`."""
    labels = (
        rb'\{"metric":\{"' + first.encode() + rb'":' + _LABEL + rb',"' + second.encode() + rb'":' + _LABEL
    )
    return re.compile(labels + rb'\},"value":\[[^,\]]*,"([^"]*)"\]\}')


def prometheus_url(option: str | None = None) -> str | None:
    """The Prometheus server to read: the command-line option, else the `cluster.prometheus_url`
    setting ($GAUDI_TUI_PROMETHEUS, else config.toml)."""
    url = option or settings.load().settings.prometheus_url
    return url.rstrip("/") if url else None


class PrometheusError(Exception):
    """Prometheus could not be asked or gave no usable answer; the message says which and what to do."""


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]
    """(unix time, value), oldest first."""


class PrometheusClient:
    def __init__(self, url: str, timeout: float = 5.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise PrometheusError(f"{url!r} is not an http:// or https:// URL of a Prometheus server")
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _get(self, path: str, params: dict[str, str]) -> Any:
        return self._data(self._body(path, params))

    def _body(self, path: str, params: dict[str, str]) -> bytes:
        address = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(address, timeout=self.timeout) as answer:  # noqa: S310 (http(s) only)
                body = answer.read()
        except urllib.error.HTTPError as error:
            body = error.read()
            detail = _error_text(body) or error.reason
            raise PrometheusError(f"Prometheus at {self.url} answered HTTP {error.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise PrometheusError(
                f"Prometheus unreachable at {self.url} ({reason}); check the URL or the SSH tunnel"
            ) from None
        return body

    def _data(self, body: bytes) -> Any:
        try:
            document = json.loads(body)
        except ValueError:
            raise PrometheusError(f"{self.url} did not answer like Prometheus (no JSON)") from None
        if not isinstance(document, dict) or document.get("status") != "success":
            raise PrometheusError(f"Prometheus query failed: {_error_text(body) or 'no reason given'}")
        return document.get("data") or {}

    def query(self, promql: str, at: float | None = None) -> list[Sample]:
        """An instant query; the answer must be a vector."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self._get("/api/v1/query", params)
        if data.get("resultType") != "vector":
            raise PrometheusError(f"{promql!r} gave a {data.get('resultType')}, not a vector")
        return [Sample(item["metric"], float(item["value"][1])) for item in data.get("result", [])]

    def card_values(self, promql: str, at: float | None = None) -> list[CardValue]:
        """An instant query of the form `… by (instance, id) (…)`, read straight from the answer's
        bytes: a refresh of 4,096 cards gets ~30,000 values, and building JSON objects for them was
        most of its cost. An answer of any other shape (a series without `id`, an error) is decoded
        as JSON; series without `instance` or `id` are left out."""
        return self.pair_values(promql, "instance", "id", at)

    def pair_values(self, promql: str, one: str, other: str, at: float | None = None) -> list[CardValue]:
        """(`one`, `other`, value) of each result of a `… by (one, other)` query, read from the bytes as
        `card_values` does (JSON for any other shape; series lacking either label left out)."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        body = self._body("/api/v1/query", params)
        first, second = sorted((one, other))
        found = _pair_result(first, second).findall(body)
        if body.startswith(b'{"status":"success"') and len(found) == body.count(b'{"metric":'):
            if b"\\" not in body:
                if first == one:
                    return [(a.decode(), b.decode(), float(value)) for a, b, value in found]
                return [(b.decode(), a.decode(), float(value)) for a, b, value in found]
        data = self._data(body)
        if data.get("resultType") != "vector":
            raise PrometheusError(f"{promql!r} gave a {data.get('resultType')}, not a vector")
        return [
            (item["metric"][one], item["metric"][other], float(item["value"][1]))
            for item in data.get("result", [])
            if one in item["metric"] and other in item["metric"]
        ]

    def label_values(self, label: str, match: str, start: float, end: float) -> list[str]:
        """The values `label` takes on the series `match` selects between `start` and `end` (an index
        lookup: no sample is read)."""
        params = {"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"}
        data = self._get(f"/api/v1/label/{urllib.parse.quote(label)}/values", params)
        if not isinstance(data, list):
            raise PrometheusError(f"{self.url} gave no list of {label} values")
        return [str(value) for value in data]

    def query_range(self, promql: str, start: float, end: float, step: float) -> list[Series]:
        params = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        data = self._get("/api/v1/query_range", params)
        return [
            Series(item["metric"], tuple((float(t), float(v)) for t, v in item.get("values", [])))
            for item in data.get("result", [])
        ]


def _error_text(body: bytes) -> str | None:
    try:
        document = json.loads(body)
    except ValueError:
        return None
    return str(document.get("error")) if isinstance(document, dict) and document.get("error") else None
