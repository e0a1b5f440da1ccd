"""Shared fixtures: every test gets its own GAUDI_TUI_HOME; no cursor blink in snapshots."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest
from textual.widgets import Input

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.settings import SPECS
from gaudi_tui.data import HLSMI_SAMPLES
from tests import required

pytest_plugins = ["tests.session_fixtures"]
"""The session fixtures of more than one folder (a Slurm cluster, a LoRA run), defined once."""

ROOT = Path(__file__).resolve().parent.parent
FAKES = ROOT / "tests" / "fakes"
SAMPLES = HLSMI_SAMPLES

CPU = Accelerator(
    "cpu",
    "no CUDA device; no Gaudi software (habana_frameworks is not installed)",
    torch_version="2.13.0+cpu",
)


USER_SETTINGS = (*(spec.env for spec in SPECS if spec.env), "GAUDI_TUI_ALERT_WEBHOOK")
"""Every environment variable a user may export to point gaudi-tui at their own things (runs folder,
cluster, Prometheus, theme, the alerts' webhook...): unset in every test, so a test touches only
what it made (and no job a test runs posts its end to the user's chat)."""


GROUPS = {"ray_cluster": "ray", "slurm_cluster": "slurm", "lora_run": "lora", "server": "serve"}
"""The session's costly fixtures (the real Ray and Slurm clusters, a trained LoRA run, a real
`transformers serve`) and their xdist groups: every pytest-xdist worker that ran one of their tests
would start its own. Each group's tests run on one worker, one at a time; `make test` runs three
workers on two cores, so the clusters' waits (job starts, Slurm's and Ray's polls) overlap the
other tests' work."""


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist's workers run with COLUMNS=80 and LINES=24 set, which a child inherits and
    takes for its terminal's size (the panel in a 100x30 tmux pane drew at 80 columns): unset,
    as in a run without workers."""
    for name in ("COLUMNS", "LINES"):
        if os.environ.get("PYTEST_XDIST_WORKER"):
            os.environ.pop(name, None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `pytest -n 2 --dist loadgroup` (`make test`) the tests of a group run on one worker,
    one after another, as without xdist; the other tests share the workers.

    First among the hooks: xdist's own (registered after this conftest, so called before it
    otherwise) reads the marker to put the group into the test's id, and without `tryfirst` it
    read it before it was there: every group was split over the workers (two Ray clusters, two
    Slurm clusters and two LoRA trainings in each run). The grouped tests go first, so the
    longest work starts at once and the other tests fill the other worker meanwhile."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        group = next((group for name, group in GROUPS.items() if name in names), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A grouped test whose id lacks its group's suffix would run on any worker (and start its
    cluster there a second time): it fails at once, saying why (what an xdist change could bring back)."""
    if getattr(item.config.option, "loadgroup", False) and item.get_closest_marker("xdist_group"):
        if "@" not in item.nodeid:
            pytest.fail(
                "xdist did not see this test's group (tests/conftest.py GROUPS): it would run on any worker"
            )


@pytest.fixture(autouse=True)
def gaudi_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "gaudi-home"
    monkeypatch.setenv("GAUDI_TUI_HOME", str(home))
    for name in USER_SETTINGS:  # GAUDI_TUI_RUNS_DIR outranks GAUDI_TUI_HOME: never the user's runs
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return home


@pytest.fixture
def tmux_installed() -> None:
    """tmux is on PATH (or the test skips; under CI it fails: tests/required.py)."""
    required.tools("tmux", "tmux")


@pytest.fixture
def prometheus_installed() -> None:
    """prometheus and promtool are on PATH (or the test skips; under CI it fails)."""
    required.tools("prometheus", "prometheus", "promtool")


@pytest.fixture(autouse=True)
def no_cursor_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None, raising=False)


@pytest.fixture
def cpu_accelerator() -> Accelerator:
    return CPU


@functools.cache
def host_accelerator() -> Accelerator:
    """What the accelerator probe picks on this machine (probed once, in a child, like the panel):
    tests expect its device, dtype and memory kind, so the suite passes on a CPU, CUDA or Gaudi host."""
    from gaudi_tui.core import accelerator

    return accelerator.probe(env=child_env())


def child_env(**extra: str) -> dict[str, str]:
    """Environment for a child `python` that finds this checkout first (and fakes if asked)."""
    env = dict(os.environ)
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (extra.get("PYTHONPATH"), str(ROOT)) if p)
    return env


PYTHON = sys.executable
