"""Logging to a rotating file in the state folder; never to the terminal the TUI draws on."""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

from gaudi_tui.core import paths

LOG_FILE_NAME = "gaudi-tui.log"


def configure(level: int = logging.INFO) -> Path:
    """Send the root logger to `<state>/logs/gaudi-tui.log` (1 MB × 3) and nowhere else."""
    path = paths.log_dir() / LOG_FILE_NAME
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=1_000_000, backupCount=3, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)
    return path
