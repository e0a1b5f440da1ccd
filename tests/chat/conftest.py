"""Chat fixtures: the demo model, and one loaded engine shared by the tests of a module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gaudi_tui.core.chat.client import EngineClient
from gaudi_tui.core.chat.options import LoadOptions
from gaudi_tui.core.demo import resolve_model
from tests.conftest import ROOT


@pytest.fixture(scope="session")
def demo_path() -> Path:
    path = Path(resolve_model("demo"))
    assert (path / "config.json").is_file(), "the demo model is missing: run `make demo-model`"
    return path


def start_engine(log_dir: Path, options: LoadOptions | None = None, **env: str) -> EngineClient:
    """A started (and, with `options`, loaded) engine that imports this checkout."""
    env.setdefault("PYTHONPATH", str(ROOT))
    env.setdefault("HF_HUB_OFFLINE", "1")
    client = EngineClient(env=env, log_path=log_dir / "chat-engine.log")
    client.start()
    if options is not None:
        client.load(options)
    return client


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineClient]:
    """The demo model loaded once per module (engine start + load is the slow part)."""
    client = start_engine(tmp_path_factory.mktemp("engine"), LoadOptions())
    yield client
    client.shutdown()
