"""`[alerts]` in config.toml: what fires, its thresholds, and where it goes.

Read with the rest of config.toml (`settings._read_file`: the same file, the same tolerance): a
value the file gets wrong keeps its default and becomes a problem naming the line; `load()` never
raises. `$GAUDI_TUI_ALERT_WEBHOOK` outranks `webhook` (a URL with a token is better kept out of a
file). The webhook URL is a secret: `AlertConfig.webhook_host` is what may be printed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gaudi_tui.core import settings
from gaudi_tui.core.alerts.model import KINDS
from gaudi_tui.core.appearance import config_path
from gaudi_tui.core.devices.usage import BUSY_MIB

WEBHOOK_ENV = "GAUDI_TUI_ALERT_WEBHOOK"


@dataclass(frozen=True)
class AlertConfig:
    off: tuple[str, ...] = ()
    """Kinds of alert that never fire (`model.KINDS`)."""
    terminal: bool = True
    """The bell and the desktop-notification escapes on the terminal of `gaudi-tui watch` and the panel."""
    webhook: str = ""
    command: tuple[str, ...] = ()
    """argv run for every alert (never through a shell), the alert in GAUDI_TUI_ALERT_* variables."""
    timeout_s: float = 10.0
    """The time bound of one webhook try or command run."""
    retries: int = 3
    retry_s: float = 2.0
    """The wait before the first retry; it doubles for each next one."""
    stall_factor: float = 10.0
    stall_min_s: float = 120.0
    """A job stalls after no step for stall_factor × its usual step time, and never sooner than this."""
    idle_held_s: float = 900.0
    idle_util_pct: float = 1.0
    """A card at or below this utilization is idle."""
    held_mib: int = BUSY_MIB
    """A card with more than this much memory in use holds memory: the Devices screen's `usage.BUSY_MIB`
    and the shipped Prometheus rule's 2 GiB by default (an idle Gaudi 2 shows 768 MiB)."""
    hbm_full_pct: float = 95.0
    repeat_s: float = 86400.0
    """A card alert with the same key (same card, same holders) is sent again only after this."""

    def fires(self, kind: str) -> bool:
        return kind not in self.off

    @property
    def webhook_host(self) -> str:
        """The webhook as it may be printed: its host only (the path holds the token)."""
        if not self.webhook:
            return ""
        return urlsplit(self.webhook).hostname or "?"

    def destinations(self) -> str:
        """Where alerts go besides the notifications file, in words (the webhook by its host only)."""
        words = ["terminal"] if self.terminal else []
        if self.webhook:
            words.append(f"webhook {self.webhook_host}")
        if self.command:
            words.append(f"command {self.command[0]}")
        return ", ".join(words) or "notifications file only"

    def changed(self) -> dict[str, object]:
        """The values that differ from the defaults, as they may be printed (the webhook by its host)."""
        default = AlertConfig()
        out: dict[str, object] = {}
        for name in (f.name for f in fields(self)):
            value = getattr(self, name)
            if value != getattr(default, name):
                out[name] = (
                    self.webhook_host
                    if name == "webhook"
                    else list(value)
                    if isinstance(value, tuple)
                    else value
                )
        return out

    @property
    def delivers(self) -> bool:
        """Something beyond the notifications file and the terminal: a webhook or a command."""
        return bool(self.webhook or self.command)


def _number(low: float, high: float, integer: bool = False) -> Callable[[object], Any]:
    def convert(value: object) -> float | int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("must be a number")
        if not (math.isfinite(value) and low <= value <= high) or (integer and value != int(value)):
            raise ValueError(f"must be a{'' if not integer else 'n integer'} number from {low:g} to {high:g}")
        return int(value) if integer else float(value)

    return convert


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def _webhook(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("must be an http:// or https:// URL")
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL")
    return value.strip()


def _argv(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise ValueError('must be a list of words, e.g. ["notify-send", "gaudi-tui"] (no shell)')
    return tuple(value)


def _kinds(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(v in KINDS for v in value):
        raise ValueError(f"must be a list of: {', '.join(KINDS)}")
    return tuple(value)


CONVERT: dict[str, Callable[[object], Any]] = {
    "off": _kinds,
    "terminal": _flag,
    "webhook": _webhook,
    "command": _argv,
    "timeout_s": _number(0.1, 300.0),
    "retries": _number(0, 10, integer=True),
    "retry_s": _number(0.0, 600.0),
    "stall_factor": _number(1.0, 1000.0),
    "stall_min_s": _number(0.0, 86400.0),
    "idle_held_s": _number(0.0, 7 * 86400.0),
    "idle_util_pct": _number(0.0, 100.0),
    "held_mib": _number(0, 1 << 30, integer=True),
    "hbm_full_pct": _number(1.0, 100.0),
    "repeat_s": _number(0.0, 365 * 86400.0),
}
assert set(CONVERT) == {f.name for f in fields(AlertConfig)}


def load(path: Path | None = None, environ: Mapping[str, str] | None = None) -> tuple[AlertConfig, list[str]]:
    """The effective alert settings and the problems with them (words naming the line). Never raises."""
    path = path or config_path()
    environ = os.environ if environ is None else environ
    data, text, read_problems, _ = settings._read_file(path)
    problems = [str(p) for p in read_problems]
    table = data.get("alerts", {})
    values: dict[str, Any] = {}
    if not isinstance(table, dict):
        problems.append(
            str(settings.Problem("[alerts] must be a table", settings._line_of(text, None, "alerts")))
        )
        table = {}
    for key, raw in table.items():
        line = settings._line_of(text, "alerts", key)
        if key not in CONVERT:
            problems.append(str(settings.Problem(f"unknown key {key!r} in [alerts] (ignored)", line)))
            continue
        try:
            values[key] = CONVERT[key](raw)
        except ValueError as error:
            problems.append(str(settings.Problem(f"alerts.{key} {error}; using the default", line)))
    if env_hook := environ.get(WEBHOOK_ENV, "").strip():
        try:
            values["webhook"] = _webhook(env_hook)
        except ValueError as error:
            problems.append(f"${WEBHOOK_ENV} {error}; ignored")
    return replace(AlertConfig(), **values), problems
