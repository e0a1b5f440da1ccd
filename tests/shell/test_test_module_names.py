"""Test modules have unique names: without packages, pytest imports them by their bare name, and a
second `test_screen.py` in another folder stops the whole collection."""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_every_test_module_name_is_used_once() -> None:
    names = Counter(path.name for path in TESTS.rglob("test_*.py") if "__snapshots__" not in path.parts)
    assert len(names) > 50  # the walk found the suite
    assert [name for name, count in names.items() if count > 1] == []
