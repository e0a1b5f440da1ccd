"""The real components the suite tests against, and what a test does when one is missing.

Outside CI a test that cannot have its component skips, with the reason (`make test` prints every
skip with `-rs`). Under `CI=true`, or with `GAUDI_TUI_REQUIRE=all`, the component is required: the
test fails, naming what is missing, so a run where `make system` could not install Prometheus or
the Slurm cluster could not start is red, not green with skips. `GAUDI_TUI_REQUIRE=tmux,ray` requires
only those.
"""

from __future__ import annotations

import importlib
import os
import shutil
from types import ModuleType
from typing import NoReturn

import pytest

COMPONENTS = ("tmux", "prometheus", "slurm", "ray", "freezer", "serving", "root")
"""`root`: the tests that start a process as another user (CI runs as root; the Slurm cluster needs it too)."""


def required() -> frozenset[str]:
    """The components this run must have."""
    asked = os.environ.get("GAUDI_TUI_REQUIRE", "").strip()
    if asked == "all" or os.environ.get("CI", "").strip().lower() == "true":
        return frozenset(COMPONENTS)
    named = {word.strip() for word in asked.split(",") if word.strip()}
    unknown = named - set(COMPONENTS)
    if unknown:
        raise pytest.UsageError(
            f"GAUDI_TUI_REQUIRE names {', '.join(sorted(unknown))}; the components are: all, {', '.join(COMPONENTS)}"
        )
    return frozenset(named)


def require(component: str, why: str, module_level: bool = False) -> NoReturn:
    """`component` is missing for `why`: fail where it is required, else skip."""
    assert component in COMPONENTS, component
    if component in required():
        pytest.fail(f"required component missing: {component}: {why}", pytrace=False)
    pytest.skip(f"{component}: {why}", allow_module_level=module_level)


def tools(component: str, *names: str) -> None:
    """Each of `names` is on PATH, or `component` is missing."""
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        hint = {"tmux": "apt-get install tmux", "prometheus": "apt-get install prometheus"}.get(component, "")
        require(
            component,
            f"{', '.join(missing)} not on PATH (`make system` installs it with root or password-less sudo"
            + (f"; else `{hint}`)" if hint else ")"),
        )


def module(name: str, component: str, why: str) -> ModuleType:
    """Import `name` at a test module's top, or `component` is missing."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        require(component, f"{why} ({exc})", module_level=True)
