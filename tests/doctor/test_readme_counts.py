"""The README's counts and lists of checks and known errors are the code's."""

from __future__ import annotations

import re

from gaudi_tui.core.doctor.checks import ALL_CHECKS
from gaudi_tui.core.doctor.knowledge import load
from tests.conftest import ROOT


def test_the_readme_counts_what_the_code_has() -> None:
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    checks = re.search(r"The Gaudi environment doctor: (\d+) checks with stable ids \(([^)]*)\)", text)
    assert checks is not None
    assert int(checks.group(1)) == len(ALL_CHECKS)
    assert re.findall(r"`([\w.]+)`", checks.group(2)) == [c.id for c in ALL_CHECKS]
    known = re.search(r"\((\d+) known Gaudi and Ray errors", text)
    assert known is not None and int(known.group(1)) == len(load())
