"""No import circles in gaudi_tui: every import counts (module level, inside functions, under
`if TYPE_CHECKING:`), so a circle cannot hide behind a lazy import."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "gaudi_tui"


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The gaudi_tui modules `name` imports (a `from X import Y` names X, and X.Y when Y is a module)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parent, *([base] if base else [])])
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in out if m in known and m != name}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_gaudi_tui_has_no_import_circle() -> None:
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert "gaudi_tui.ui.screens.base" in graph["gaudi_tui.ui.screens.devices_feeds"]  # the walk sees imports
    assert circles(graph) == []


def test_the_walk_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_untrusted_layer_stands_on_no_domain() -> None:
    """core/untrusted is the floor every domain reads outside input through: it imports none of them,
    and serve/ and chat/ reach its file helpers directly, not by climbing into jobs/."""
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    layer = [name for name in graph if name.startswith("gaudi_tui.core.untrusted")]
    assert "gaudi_tui.core.untrusted.files" in layer
    assert {m for name in layer for m in graph[name] if not m.startswith("gaudi_tui.core.untrusted")} == set()
    helpers = {"gaudi_tui.core.jobs.status", "gaudi_tui.core.jobs.tailing"}
    climbing = {
        name: graph[name] & helpers
        for name in graph
        if name.startswith(("gaudi_tui.core.serve", "gaudi_tui.core.chat")) and graph[name] & helpers
    }
    assert climbing == {
        "gaudi_tui.core.chat.served": {"gaudi_tui.core.jobs.status"}
    }  # effective_state: a job's state, not a file helper


def test_serve_stands_below_jobs() -> None:
    """core/serve (the model servers: address, model, readiness, figures) imports nothing of core/jobs:
    a server's argv from a job's spec is the serve kind's (jobs/kinds/serve_engines), so jobs uses
    serve and never the other way."""
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    up = {
        name: sorted(m for m in graph[name] if m.startswith("gaudi_tui.core.jobs"))
        for name in graph
        if name.startswith("gaudi_tui.core.serve")
    }
    assert "gaudi_tui.core.serve.ready" in up
    assert {name: found for name, found in up.items() if found} == {}
