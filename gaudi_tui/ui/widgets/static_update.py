"""Updating a Static only when its content changed, and re-laying it out only when its shape did
(a layout pass redraws the whole screen: that is most of a refresh's CPU)."""

from __future__ import annotations

import weakref

from rich.text import Text
from textual.widgets import Static

_SHOWN: weakref.WeakKeyDictionary[Static, tuple[str | Text, tuple[int, int]]] = weakref.WeakKeyDictionary()


def show(widget: Static, content: str | Text) -> None:
    """Update `widget` when `content` differs from what it shows; re-layout when its shape changed."""
    shape = _shape(content)
    seen = _SHOWN.get(widget)
    if seen is not None and seen[0] == content:
        return
    widget.update(content, layout=seen is None or seen[1] != shape)
    _SHOWN[widget] = (content, shape)


def _shape(content: str | Text) -> tuple[int, int]:
    lines = (content.plain if isinstance(content, Text) else content).split("\n")
    return len(lines), max(len(line) for line in lines)


def composed(content: str | Text, id: str, classes: str = "") -> Static:
    """A Static composed with its content, noted as shown (so `show` compares against it)."""
    widget = Static(content, id=id, markup=False, classes=classes)
    _SHOWN[widget] = (content, _shape(content))
    return widget
