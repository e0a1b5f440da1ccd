"""Where the Prometheus server's URL comes from: the `--prometheus` option, else the
`cluster.prometheus_url` setting (the `GAUDI_TUI_PROMETHEUS` environment variable, else config.toml).
Apart from the client (`prometheus.py`) so the Fleet screen's first frame does not import it."""

from __future__ import annotations

from gaudi_tui.core import settings

ENV_VAR = "GAUDI_TUI_PROMETHEUS"


def prometheus_url(option: str | None = None) -> str | None:
    """The Prometheus server to read: the command-line option, else the `cluster.prometheus_url`
    setting ($GAUDI_TUI_PROMETHEUS, else config.toml)."""
    url = option or settings.load().settings.prometheus_url
    return url.rstrip("/") if url else None
