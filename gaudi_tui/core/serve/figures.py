"""A model server's own figures, from its Prometheus `/metrics`: requests running and waiting,
KV-cache use and the token counters (vLLM's names; `vllm:gpu_cache_usage_perc` is the KV-cache
gauge's name before vLLM 0.9). A server that exports none (`transformers serve` answers 404) has
no figures: `fetch_figures` returns None and `figure_lines` says so.

Asked through the bounded client (`core/untrusted/http.py`: a deadline for the whole exchange, the
body capped at MAX_ANSWER, never through a proxy: the server is the job's own node), read with
prometheus_client's own text parser; a family summed over its label sets (one per
engine when vLLM runs data-parallel), the KV-cache use the fullest engine's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from gaudi_tui.core.chat.errors import ChatError, first_line
from gaudi_tui.core.chat.openai_api import parse_url
from gaudi_tui.core.serve import ready
from gaudi_tui.core.untrusted import http

FETCH_TIMEOUT_S = 2.0
MAX_ANSWER = 4 << 20
"""vLLM's /metrics is ~40 KB per engine; LoRA adapters and histograms add a few KB each."""
NO_FIGURES = "the server exports no metrics (no vLLM figures on /metrics)"
SUMMED = {
    "vllm:num_requests_running": "running",
    "vllm:num_requests_waiting": "waiting",
    "vllm:prompt_tokens": "prompt_tokens",
    "vllm:generation_tokens": "generation_tokens",
}
KV_CACHE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
"""The newer name first: an engine exporting both (vLLM 0.9 and 0.10) is read by it."""


class FiguresError(Exception):
    """The server could not be asked (down, unreachable) or answered something unreadable."""


@dataclass(frozen=True)
class ServerFigures:
    running: float | None = None
    waiting: float | None = None
    kv_cache_usage: float | None = None
    """0 to 1."""
    prompt_tokens: float | None = None
    generation_tokens: float | None = None


def parse_figures(text: str) -> ServerFigures | None:
    """The figures in a /metrics text; None when it holds none of vLLM's. Raises FiguresError for a
    text that is not Prometheus' exposition format."""
    sums: dict[str, float] = {}
    kv: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            values = [
                s.value
                for s in family.samples
                if s.name in (family.name, family.name + "_total") and math.isfinite(s.value)
            ]  # a value past any float (a 5000-digit one) or NaN is no figure
            if family.name in SUMMED and values:
                key = SUMMED[family.name]
                sums[key] = sums.get(key, 0.0) + sum(values)
            elif family.name in KV_CACHE and values:
                kv[family.name] = max(values + [kv.get(family.name, 0.0)])
    except (ValueError, TypeError, IndexError, RecursionError) as exc:  # what the parser raises on bad text
        raise FiguresError(f"/metrics is not Prometheus text: {first_line(str(exc), 160)}") from None
    usage = next((kv[name] for name in KV_CACHE if name in kv), None)
    if not sums and usage is None:
        return None
    return ServerFigures(kv_cache_usage=usage, **sums)


def fetch_figures(url: str, timeout: float = FETCH_TIMEOUT_S) -> ServerFigures | None:
    """The figures of the server at `url` (its base URL); None when it exports none."""
    try:
        base = parse_url(url).url
    except ChatError as exc:
        raise FiguresError(exc.message) from None
    try:
        answer = http.get(base + "/metrics", timeout=timeout, direct=True, max_body=MAX_ANSWER)
    except http.HttpError as exc:
        raise FiguresError(first_line(str(exc), 200)) from None
    if answer.status == 404:
        return None
    if answer.status != 200:
        raise FiguresError(f"{base}/metrics answered {answer.status} {answer.reason}")
    text = answer.body.decode("utf-8", "replace")
    return parse_figures(text)


def figure_lines(figures: ServerFigures | None) -> list[str]:
    """The figures as the job's details show them."""
    if figures is None:
        return [NO_FIGURES]
    lines = []
    if figures.running is not None or figures.waiting is not None:
        lines.append(f"requests: {_count(figures.running)} running, {_count(figures.waiting)} waiting")
    if figures.kv_cache_usage is not None:
        lines.append(f"KV cache: {figures.kv_cache_usage * 100:.1f}% used")
    tokens = [
        f"{_count(value)} {name}"
        for value, name in ((figures.prompt_tokens, "prompt"), (figures.generation_tokens, "generated"))
        if value is not None
    ]
    if tokens:
        lines.append("tokens since start: " + ", ".join(tokens))
    return lines


def _count(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f}"


def job_figure_lines(run_path: Path) -> list[str]:
    """A served job's own figures for its details ([] until it is ready): one call to its /metrics."""
    info = ready.read(run_path)
    if not info or not info.get("ready"):
        return []
    try:
        lines = figure_lines(fetch_figures(str(info.get("url", ""))))
    except FiguresError as exc:
        lines = [str(exc)]
    return [f"server   {line}" for line in lines]
