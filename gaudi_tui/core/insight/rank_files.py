"""The names Intel's metrics writer gives one `PT_HPU_METRICS_FILE` across ranks and attempts.

From HabanaAI/gaudi-pytorch-bridge v1.19.0, `saver.py` (`_determine_file_name_for_multinode`,
`_create_unique_file`; docs/runtime-metrics.md): with `RANK` or
`OMPI_COMM_WORLD_RANK` set, `-rank<N>` goes before the last extension, found by cutting the whole
path (`rsplit(".", 1)`), and an existing name becomes `<name>.1`, `<name>.2`, ...
"""

from __future__ import annotations

import os
import re
from pathlib import Path


def _split(base: Path) -> tuple[str, str]:
    """The writer's cut of the whole path at its last dot (`rsplit(".", 1)`): a dot in a folder's
    name, with none in the file's, cuts in the folder (`a.b/m` → rank files `a-rank0.b/m`)."""
    head, dot, ext = str(base).rpartition(".")
    return (head, f".{ext}") if dot else (str(base), "")


def rank_name(base: Path, rank: int | None) -> Path:
    """The writer's name for `rank` (its `_determine_file_name_for_multinode`)."""
    if rank is None:
        return base
    head, ext = _split(base)
    return Path(f"{head}-rank{rank}{ext}")


def find_files(base: Path) -> dict[tuple[int | None, int], Path]:
    """Every file the writer may have made for `base`: {(rank or None, .N index): path}."""
    found: dict[tuple[int | None, int], Path] = {(None, i): path for i, path in _numbered(base).items()}
    head, ext = _split(base)
    folder, name = os.path.split(head)
    here, sep, below = ext.partition(os.sep)  # the rank's part of the path, and what lies under it
    pattern = re.compile(rf"^{re.escape(name)}-rank(\d+){re.escape(here)}$")
    for entry in _entries(Path(folder or os.curdir)):
        if (match := pattern.match(entry.name)) is not None:
            path = entry / below if sep else entry
            found.update({(int(match[1]), index): p for index, p in _numbered(path).items()})
    return found


def _numbered(path: Path) -> dict[int, Path]:
    """`path` and the `.N` names the writer gives when it exists: {N (0 for path itself): path}."""
    pattern = re.compile(rf"^{re.escape(path.name)}(?:\.(\d+))?$")
    return {int(m[1] or 0): e for e in _entries(path.parent) if (m := pattern.match(e.name))}


def _entries(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []
