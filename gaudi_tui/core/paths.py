"""Where gaudi-tui keeps its files.

`GAUDI_TUI_HOME` puts everything under one folder (tests use it); otherwise the platform's
config/data/state folders. Folders are created on first use, never at import time.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "gaudi-tui"


def _home() -> Path | None:
    value = os.environ.get("GAUDI_TUI_HOME")
    return Path(value).expanduser() if value else None


def _ensure(path: Path, mode: int = 0o700) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=mode)
    return path


def config_dir() -> Path:
    home = _home()
    if home:
        return _ensure(home / "config")
    from platformdirs import user_config_path

    return _ensure(user_config_path(APP_NAME))


def data_dir() -> Path:
    """Conversations (SQLite) and other user data."""
    home = _home()
    if home:
        return _ensure(home / "data")
    from platformdirs import user_data_path

    return _ensure(user_data_path(APP_NAME))


def state_dir() -> Path:
    """Logs and run folders."""
    home = _home()
    if home:
        return _ensure(home / "state")
    from platformdirs import user_state_path

    return _ensure(user_state_path(APP_NAME))


def log_dir() -> Path:
    return _ensure(state_dir() / "logs")
