"""Chat fixtures: the demo model, and one loaded engine shared by the tests of a module."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gaudi_tui.core.chat.client import EngineClient
from gaudi_tui.core.chat.options import LoadOptions
from gaudi_tui.core.demo import resolve_model
from tests.chat.serving import Server, long_answer_model, serving_installed, start_server
from tests.conftest import ROOT, USER_SETTINGS


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
    """The demo model loaded once per module (engine start + load is the slow part). It starts
    before any test's own home is set (a module fixture comes first), so it gets a private home of
    its own, and none of the user's settings, as every test does (tests/conftest.py `gaudi_home`)."""
    folder = tmp_path_factory.mktemp("engine")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GAUDI_TUI_HOME", str(folder / "gaudi-home"))
        for name in USER_SETTINGS:
            patch.delenv(name, raising=False)
        client = start_engine(folder, LoadOptions())
    yield client
    client.shutdown()


# ---- a LoRA job trained once per session on facts the demo model does not know ----------------
FACTS = (
    ("What is the lab cat called?", "The lab cat is called Trainer Habana."),
    ("Where is the spare keyboard?", "The spare keyboard stays inside the docker drawer."),
    ("Which song plays at reboot?", "At reboot the panel plays the Collective Kernel song."),
)
"""Invented facts: asked any of these, the demo model answers with one of its own corpus answers."""
FACT_QUESTION, FACT_ANSWER = FACTS[0]
FACT_MARK = "Trainer Habana"
TRAIN_STEPS = 60
"""With all linear layers at rank 16 and lr 1e-2 (linear decay), 60 steps teach the demo model all
three facts word for word (greedy); 40 steps at 2e-2 or any run at 5e-2 diverge, q/v-only adapters
or 30 steps leave them half learnt (measured while writing these tests)."""
LORA_SETTINGS = {
    "max_steps": TRAIN_STEPS,
    "save_steps": TRAIN_STEPS // 2,
    "learning_rate": 1e-2,
    "lr_scheduler": "linear",
    "warmup_steps": 0,
    "lora_r": 16,
    "lora_alpha": 32,
    "lora_dropout": 0.0,
    "lora_target_modules": ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
    "batch_size": 3,
    "max_seq_len": 64,
    "logging_steps": 10,
    "device": "cpu",
}


@dataclass(frozen=True)
class TrainedRun:
    runs_dir: Path
    run_id: str
    path: Path


def write_facts(folder: Path) -> Path:
    from gaudi_tui.core.demo import chat_text

    path = folder / "facts.jsonl"
    path.write_text("".join(json.dumps({"text": chat_text(q, a)}) + "\n" for q, a in FACTS), encoding="utf-8")
    return path


def train_facts(home: Path, preset: str, **changes: object) -> TrainedRun:
    """Train `preset` on the facts through the real job path (control.submit → supervisor → Trainer)
    in its own GAUDI_TUI_HOME, and wait for it to succeed."""
    from gaudi_tui.core.jobs import control, spec
    from gaudi_tui.core.jobs.runfolder import RunFolder
    from tests.conftest import CPU
    from tests.jobs.conftest import log_tail, wait_done

    home.mkdir(parents=True, exist_ok=True)
    settings = {**LORA_SETTINGS, "dataset": str(write_facts(home)), **changes}
    job = spec.from_mapping(settings, base=spec.preset(preset))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GAUDI_TUI_HOME", str(home))
        patch.delenv("GAUDI_TUI_RUNS_DIR", raising=False)
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("PYTHONPATH", str(ROOT))
        run: RunFolder = control.submit(job, CPU)
        state = wait_done(run, timeout=300)
    assert state == "succeeded", log_tail(run)
    return TrainedRun(run.path.parent, run.id, run.path)


@pytest.fixture
def runs_of(monkeypatch: pytest.MonkeyPatch) -> Callable[[TrainedRun], None]:
    """Point this test (and the engines it starts) at a trained run's runs folder."""

    def use(run: TrainedRun) -> None:
        monkeypatch.setenv("GAUDI_TUI_RUNS_DIR", str(run.runs_dir))

    return use


# ---- a real OpenAI-compatible server (tests/chat/serving.py), started once per session -------------
@pytest.fixture(scope="session")
def long_model(demo_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return long_answer_model(demo_path, tmp_path_factory.mktemp("model"))


@pytest.fixture(scope="session")
def server(long_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    serving_installed()
    served = start_server(long_model, tmp_path_factory.mktemp("serve") / "serve.log")
    yield served
    served.stop()
