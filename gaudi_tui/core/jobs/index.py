"""`jobs-index.json` in the state folder: the rows of finished runs, so a new panel or `gaudi-tui
jobs` lists a year of runs without parsing each one's spec.toml, status.json and metrics.jsonl.

Only settled runs (succeeded, failed, stopped, cancelled) are kept, each with the stamp of what its row was
read from: the run folder's mtime (a resume rewrites status.json, a stop creates STOP, both by a
rename or a new entry), and status.json's and metrics.jsonl's mtime and size. A row whose stamp no
longer matches is read afresh. Any number of panels may write the file (atomically, private to
the user); rows check themselves, so the last writer wins and nothing stale is shown. A missing,
unreadable or older-format file is ignored: the run folders are the source.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from gaudi_tui.core import paths
from gaudi_tui.core.untrusted.data import record
from gaudi_tui.core.untrusted.files import load_json, write_atomic

INDEX_LIMIT = 64 << 20
"""The most index.json may hold (a year of runs is a few MiB): a larger one is read afresh."""

if TYPE_CHECKING:
    from gaudi_tui.core.jobs.runfolder import RunFolder

Stamp = tuple[int, ...]
Rows = dict[str, tuple[Stamp, dict[str, object]]]
"""Run folder path → (stamp, the row's fields)."""
Row = TypeVar("Row")


def index_path() -> Path:
    return paths.state_dir() / "jobs-index.json"


def _format(fields: tuple[str, ...]) -> str:
    """The file's format: its version and the row's fields (a row with other fields is not this one)."""
    return "1:" + ",".join(fields)


def stamp(run: RunFolder) -> Stamp | None:
    """What a settled run's row depends on; None when its folder or status cannot be read."""
    try:
        folder = os.stat(run.path).st_mtime_ns
        status = os.stat(run.status_path)
    except OSError:
        return None
    try:
        metrics = os.stat(run.metrics_path)
        written = (metrics.st_mtime_ns, metrics.st_size)
    except OSError:
        written = (0, -1)
    return (folder, status.st_mtime_ns, status.st_size, *written)


def load(fields: tuple[str, ...], make: type[Row]) -> dict[str, tuple[Stamp, Row]]:
    """The rows of the file, each the dataclass `make` of its fields, if it holds rows of these
    fields, else none. A row whose field is not of its kind (a list where a step goes) is left out:
    the run's own files make it again."""
    try:
        data = load_json(index_path(), limit=INDEX_LIMIT)
    except (OSError, ValueError):
        return {}
    if (
        not isinstance(data, dict)
        or data.get("format") != _format(fields)
        or not isinstance(data.get("runs"), dict)
    ):
        return {}
    rows = {}
    for key, entry in data["runs"].items():
        try:
            view = entry["view"]
            if isinstance(view, dict) and set(view) == set(fields):
                rows[key] = (tuple(int(n) for n in entry["stamp"]), record(make, view, what="index.json"))
        except (TypeError, KeyError, ValueError):
            continue
    return rows


def save(rows: Rows, fields: tuple[str, ...]) -> None:
    """Replace the file with these rows (a failed write only costs the next start a fuller read)."""
    runs = {key: {"stamp": list(at), "view": view} for key, (at, view) in rows.items()}
    text = json.dumps({"format": _format(fields), "runs": runs}, separators=(",", ":"))
    try:
        write_atomic(index_path(), text)
    except OSError:
        pass
