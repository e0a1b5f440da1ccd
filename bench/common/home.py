"""A bench's own GAUDI_TUI_HOME: no bench reads or writes the user's state, settings or runs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def own_home(prefix: str = "gaudi-tui-bench-", path: Path | None = None) -> Path:
    """Set GAUDI_TUI_HOME for this process and its children to `path` (a new temporary folder if
    none), always, whatever the user exported, and unset GAUDI_TUI_RUNS_DIR, which outranks the home
    for the runs folder (a bench would otherwise write its runs among the user's)."""
    home = Path(tempfile.mkdtemp(prefix=prefix)) if path is None else path
    os.environ["GAUDI_TUI_HOME"] = str(home)
    os.environ.pop("GAUDI_TUI_RUNS_DIR", None)
    return home
