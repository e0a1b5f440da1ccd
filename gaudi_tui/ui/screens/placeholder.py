"""Body text for a screen whose features are still to come."""

from __future__ import annotations

from textual.widgets import Static


def coming(what: str) -> Static:
    return Static(what, classes="placeholder", markup=False)
