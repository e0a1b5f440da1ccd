"""Every key binding the panel defines, by id: what `[keys]` in config.toml may remap."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import defaultdict
from collections.abc import Iterator, Mapping

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


def clashes(keymap: Mapping[str, str], app_owner: str = "GaudiApp") -> list[str]:
    """Keys that `keymap` gives to two bindings of one screen or widget (the app-wide bindings
    count with every screen), e.g. `c: devices.copy, devices.sort`. Textual itself lets the
    remapped binding win silently, so the panel reports these."""
    by_owner: dict[str, list[Binding]] = defaultdict(list)
    for owner, binding in own_bindings():
        by_owner[owner].append(binding)
    global_bindings = by_owner.pop(app_owner, [])
    found: set[str] = set()
    for bindings in by_owner.values():
        users: dict[str, set[str]] = defaultdict(set)
        for binding in [*bindings, *global_bindings]:
            for key in keymap.get(binding.id or "", binding.key).split(","):
                users[key.strip()].add(binding.id or binding.action)
        for key, ids in users.items():
            if len(ids) > 1 and any(i in keymap for i in ids):
                found.add(f"{key}: {', '.join(sorted(ids))}")
    return sorted(found)
