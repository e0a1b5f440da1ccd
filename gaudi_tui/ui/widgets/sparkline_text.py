"""Sparklines as text (`▁▂▃▄▅▆▇█`), cheap enough to put in table cells and refresh every second."""

from __future__ import annotations

from collections.abc import Sequence

LEVELS = "▁▂▃▄▅▆▇█"


def spark(values: Sequence[float | None], width: int, window: int, top: float | None = None) -> str:
    """The last `window` samples in `width` characters (each the highest sample of its slice),
    scaled to `top` (default: the highest sample). Time runs left to right; too few samples
    leave the left side blank, gaps (None) stay blank."""
    if width <= 0:
        return ""
    recent = list(values)[-window:]
    blank = window - len(recent)  # the window's left part, before the first sample: never drawn
    if top:
        scale = top
    else:
        known = [x for x in recent if x is not None]
        scale = max(known) if known else 0
    out = []
    for slot in range(width):
        end = (slot + 1) * window // width - blank
        chunk = recent[max(0, slot * window // width - blank) : end] if end > 0 else ()
        seen = [x for x in chunk if x is not None]
        if not seen:
            out.append(" ")
            continue
        level = 0 if scale <= 0 else int(round(max(seen) / scale * (len(LEVELS) - 1)))
        out.append(LEVELS[max(0, min(len(LEVELS) - 1, level))])
    return "".join(out)
