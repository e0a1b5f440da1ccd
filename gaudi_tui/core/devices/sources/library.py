"""What the in-process sources (HLML through pyhlml, NVML through pynvml) share: importing the
optional binding, calls that may fail on some cards or versions, byte strings."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class SourceUnavailable(Exception):
    """The library cannot be used here; str() says why. `installed` is False when the Python
    binding is simply absent (the normal case, not worth reporting)."""

    def __init__(self, why: str, installed: bool = True) -> None:
        super().__init__(why)
        self.installed = installed


def load(module: str, extra: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise SourceUnavailable(
            f"{module} is not installed (`pip install 'gaudi-tui[{extra}]'`)", installed=False
        ) from error


def text(value: Any) -> str | None:
    """A bytes or str value from the library as text; NULs and blanks → None."""
    if value is None:
        return None
    decoded = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    return decoded.strip("\x00 ").strip() or None


class LibrarySource:
    lib: ModuleType

    def optional(self, name: str, *args: Any) -> Any:
        """Call a library function that some cards or versions lack; None when it fails."""
        try:
            return getattr(self.lib, name)(*args)
        except Exception:
            return None
