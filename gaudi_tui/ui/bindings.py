"""Every key binding the panel defines, by id: what `[keys]` in config.toml may remap."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator

from textual.binding import Binding, BindingType
from textual.dom import DOMNode

import gaudi_tui.ui


def _ui_classes() -> Iterator[type[DOMNode]]:
    """Screens and widgets defined in gaudi_tui.ui (imports every ui module: call it after the
    first frame, not before)."""
    for info in pkgutil.walk_packages(gaudi_tui.ui.__path__, "gaudi_tui.ui."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, DOMNode) and cls.__module__ == module.__name__:
                yield cls


def own_bindings() -> Iterator[tuple[str, Binding]]:
    """(class name, binding) for every binding declared by a gaudi_tui.ui class itself."""
    for cls in _ui_classes():
        declared: list[BindingType] = list(cls.__dict__.get("BINDINGS", ()))
        for item in declared:
            yield cls.__name__, item if isinstance(item, Binding) else Binding(*item)


def binding_ids() -> set[str]:
    return {binding.id for _, binding in own_bindings() if binding.id}
