"""The two settings the panel's first frame needs, read before it: the theme and the keymap.

The rest of config.toml (and every check and problem line) is `core/settings.py`'s, read right after
the first frame. This module stays small on purpose: it is on the start-up path, and it imports the
TOML parser only when the file exists. A file that cannot be read or parsed gives the defaults here;
`settings.load()` reports why a moment later.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gaudi_tui.core import paths

FILE_NAME = "config.toml"
DEFAULT_THEME = "textual-dark"
THEME_ENV = "GAUDI_TUI_THEME"


def config_path() -> Path:
    return paths.config_dir() / FILE_NAME


@dataclass(frozen=True)
class Appearance:
    theme: str = DEFAULT_THEME
    keys: Mapping[str, str] = field(default_factory=dict)
    """Binding id → keys (Textual's key names, comma-separated)."""


def key_list(value: object) -> str | None:
    """A `[keys]` value as Textual takes it ("ctrl+r, f5" → "ctrl+r,f5"); None when it is no key string."""
    if not isinstance(value, str) or not value.strip():
        return None
    return ",".join(k.strip() for k in value.split(",") if k.strip())


def keys_of(table: object) -> dict[str, str]:
    """The usable entries of a `[keys]` table (the bad ones are `settings.load()`'s to report)."""
    if not isinstance(table, dict):
        return {}
    return {binding: keys for binding, value in table.items() if (keys := key_list(value)) is not None}


def read(path: Path | None = None, environ: Mapping[str, str] | None = None) -> Appearance:
    """Theme ($GAUDI_TUI_THEME, else the file, else the default) and keymap (the file). Never raises."""
    environ = os.environ if environ is None else environ
    data = _read_toml(path or config_path())
    theme = data.get("theme")
    env_theme = environ.get(THEME_ENV, "").strip()
    if env_theme:
        theme = env_theme
    if not isinstance(theme, str) or not theme.strip():
        theme = DEFAULT_THEME
    return Appearance(theme.strip(), keys_of(data.get("keys", {})))


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    # Only when there is a file: the parser is ~2 ms of start-up.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}
