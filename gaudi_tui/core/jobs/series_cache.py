"""A chart series kept between panel starts: the selected run's bounded lines and the byte offset they
were read to, so opening a long run's charts again reads only what was appended since.

One private file per run and reader in the state folder (`charts/<hash of the metrics path and the
lines kept>.json`, written atomically: the Training charts and `jobs compare` keep theirs apart). It
is used only when it holds this format, this path and these metrics, the file is at least as long as its offset, its first bytes and the bytes just before that offset are the ones
it was read from, and a file of the size saved has the modification time saved (a file rewritten,
or cut back, reads afresh); anything else is ignored. The first save of a run's series removes the
saved series of runs whose folder was deleted.

The job's supervisor keeps one more, the Training charts' series, in the run folder itself
(`KEPT`, written as the job runs: `series_keeper.py`), so that even the first open of a long run
reads only the lines after it. Its path is not checked (a shared runs folder may be mounted
elsewhere); the bytes it was read from are, as above. It is another user's file on a shared host:
read through the one bounded reader, and each line's buckets checked (`series.Downsampled.restore`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from gaudi_tui.core import paths
from gaudi_tui.core.untrusted.files import load_json, write_atomic

FORMAT = "charts-1"
CHECK_BYTES = 4096
"""The file's first bytes and the bytes before the offset whose hash must match."""
NAME = re.compile(r"[0-9a-f]{20}\.json")
KEPT = "series.json"
"""The supervisor's series, beside the run's metrics.jsonl."""


def cache_path(metrics_path: Path, metrics: tuple[str, ...]) -> Path:
    """Keyed by the file and by the lines kept: each reader (the Training charts, `jobs compare`)
    has its own, so neither overwrites the other's."""
    key = hashlib.sha1("\0".join((str(metrics_path.resolve()), *metrics)).encode()).hexdigest()[:20]
    return paths.state_dir() / "charts" / f"{key}.json"


def _check(metrics_path: Path, offset: int) -> list | None:
    """The hash of the first and of the last CHECK_BYTES before `offset`, the file's size and
    modification time; None when they cannot be read."""
    want = min(offset, CHECK_BYTES)
    try:
        with metrics_path.open("rb") as fh:
            head = fh.read(want)
            fh.seek(offset - want)
            tail = fh.read(want)
            at = os.fstat(fh.fileno())
    except OSError:
        return None
    if len(head) != want or len(tail) != want:
        return None
    return [hashlib.sha1(head).hexdigest(), hashlib.sha1(tail).hexdigest(), at.st_size, at.st_mtime_ns]


def _same(saved: list, now: list | None) -> bool:
    """The same bytes to the offset, and not a file of the saved size written since."""
    return now is not None and saved[:2] == now[:2] and (saved[2] != now[2] or saved[3] == now[3])


def kept_path(metrics_path: Path) -> Path:
    return metrics_path.parent / KEPT


def load(metrics_path: Path, metrics: tuple[str, ...], kept: bool = False) -> dict[str, Any] | None:
    """The saved state (offset, ema, lines) when it is of this file as it is now, else None; with
    `kept`, the one the supervisor keeps in the run folder."""
    try:
        data = load_json(kept_path(metrics_path) if kept else cache_path(metrics_path, metrics))
        if not isinstance(data, dict):
            return None
        offset = data["offset"]
        if (
            data["format"] != FORMAT
            or (not kept and data["path"] != str(metrics_path))
            or data["metrics"] != list(metrics)
            or not isinstance(offset, int)
            or offset <= 0
            or os.stat(metrics_path).st_size < offset
            or not _same(data["check"], _check(metrics_path, offset))
        ):
            return None
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return None
    return data


def save(metrics_path: Path, metrics: tuple[str, ...], state: dict[str, Any], kept: bool = False) -> None:
    """Write the state (a failed write only costs the next open a full read); with `kept`, into the
    run folder (the supervisor's)."""
    check = _check(metrics_path, state["offset"])
    if check is None:
        return
    text = json.dumps(
        {"format": FORMAT, "path": str(metrics_path), "metrics": list(metrics), "check": check, **state},
        separators=(",", ":"),
    )
    if kept:
        try:
            write_atomic(kept_path(metrics_path), text)
        except OSError:
            pass
        return
    target = cache_path(metrics_path, metrics)
    try:
        new = not target.exists()
        target.parent.mkdir(mode=0o700, exist_ok=True)
        write_atomic(target, text)
    except OSError:
        return
    if new:  # not at every save of a growing run: each prune reads every saved series
        prune(target.parent)


def prune(folder: Path) -> None:
    """Remove the saved series of runs whose metrics file is gone (a run folder deleted), and saved
    series that are not one; only this module's own files (`<hash>.json`) are looked at."""
    try:
        names = [e.name for e in os.scandir(folder) if NAME.fullmatch(e.name)]
    except OSError:
        return
    for name in names:
        try:
            data = load_json(folder / name)
            path = data.get("path") if isinstance(data, dict) else None
            if isinstance(path, str) and os.path.exists(path):
                continue
        except (OSError, ValueError, TypeError, KeyError):
            pass
        try:
            (folder / name).unlink()
        except OSError:
            pass
