"""Release numbers from version strings of every shape the Gaudi stack prints.

`1.22.0.740` (habana-torch-plugin), `1.22.1-97ec1a4` (driver), `2.6.0+hpu.1.20.0.543.git4952fce`
(Intel's torch), `v1.21.0` (optimum-habana warnings) all start with a release number.
"""

from __future__ import annotations

import re

_RELEASE = re.compile(r"v?(\d+(?:\.\d+)*)")


def release(text: str | None) -> tuple[int, ...]:
    """`"1.22.1-97ec1a4"` → (1, 22, 1); () when the text has no leading number."""
    match = _RELEASE.match((text or "").strip())
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()


def minor(text: str | None) -> tuple[int, ...]:
    """Major and minor: what Gaudi compatibility is decided on (`1.22.1-97ec1a4` → (1, 22))."""
    return release(text)[:2]


def at_least(text: str | None, floor: tuple[int, ...]) -> bool:
    found = release(text)
    return bool(found) and found >= floor


def dotted(numbers: tuple[int, ...]) -> str:
    return ".".join(str(n) for n in numbers)
