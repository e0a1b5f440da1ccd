"""A fresh clone stands alone: no tracked file refers to a path outside the repository (a research
folder beside the clone, this machine's absolute paths), so install, tests, benches and screenshots
need nothing beside the clone."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

SELF = Path(__file__).resolve()
ROOT = SELF.parents[2]
OUTSIDE = re.compile(
    r"\.\./(?:\.\./)*shared\b"  # the research folder beside the repository
    r"|(?<![\w.])/work/(?:shared|main|wt)\b"  # this machine's checkouts
    r"|(?<![\w.])/root/|(?<![\w.])/home/[a-z][\w-]*/"  # someone's home directory
    r"|\bshared/reference/|\bDESIGN\.md\b"  # documents that are not in the repository
)


def tracked_text_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=30
        ).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"not a git checkout ({error}): nothing to list")
    files = []
    for name in listed.decode().split("\0"):
        path = ROOT / name
        if name and path.is_file() and path != SELF and b"\0" not in path.read_bytes()[:8192]:
            files.append(path)
    return files


def test_no_tracked_file_refers_outside_the_repository() -> None:
    files = tracked_text_files()
    assert len(files) > 100  # the listing worked
    found = []
    for path in files:
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not found, "tracked files refer outside the repository:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    # Built from parts, so this file does not itself hold the paths it looks for.
    [
        "see ../.." + "/shared/reference/hl-smi.md",
        "open /work" + "/shared/DESIGN.md",
        "/root" + "/.pyenv/bin/python",
    ],
)
def test_the_pattern_catches_outside_paths(line: str) -> None:
    assert OUTSIDE.search(line)
