"""SVG snapshots of each screen at 100×30 (`make screenshots` writes the same views for the README)."""

from __future__ import annotations

import pytest

from gaudi_tui.ui.app import GaudiApp
from tests.conftest import CPU


@pytest.mark.parametrize("key", ["1", "2", "3", "4", "5", "question_mark"])
def test_screen_snapshot(snap_compare, key: str) -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    assert snap_compare(app, terminal_size=(100, 30), press=[key])
