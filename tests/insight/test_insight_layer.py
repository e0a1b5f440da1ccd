"""core/insight sits below jobs, chat and serving: none of its modules imports them or the UI
(docs/architecture.md, "Layers"), at module level or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import gaudi_tui.core.insight

HIGHER = ("gaudi_tui.core.jobs", "gaudi_tui.core.chat", "gaudi_tui.core.serve", "gaudi_tui.ui", "textual")


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_core_insight_imports_nothing_above_it() -> None:
    folder = Path(gaudi_tui.core.insight.__file__).parent
    modules = sorted(folder.glob("*.py"))
    assert len(modules) >= 8
    for module in modules:
        above = {n for n in imported(module) if n.startswith(HIGHER)}
        assert not above, f"{module.name} imports {above}"
