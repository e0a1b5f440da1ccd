"""Chatting with what training produced: a LoRA job trained once per session (tests/chat/conftest.py)
on invented facts, asked through `gaudi-tui chat`, two checkpoints side by side, the Training → Chat
key and the side-by-side view (Pilot); and the clear messages for adapters that cannot be used."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.chat import export
from gaudi_tui.core.chat.compare import Comparison
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.chat import ChatScreen
from gaudi_tui.ui.screens.chat_compare import CompareScreen
from gaudi_tui.ui.screens.training import TrainingScreen
from gaudi_tui.ui.widgets.chat_message import MessageView
from tests.chat.conftest import FACT_ANSWER, FACT_MARK, FACT_QUESTION, TRAIN_STEPS, TrainedRun, start_engine
from tests.chat.test_screen import wait_until
from tests.conftest import PYTHON, child_env

pytestmark = pytest.mark.slow
QUESTION = [{"role": "user", "content": FACT_QUESTION}]
GREEDY = GenerationParams(max_new_tokens=24)


def test_the_tuned_job_knows_the_fact_and_its_base_does_not(
    lora_run: TrainedRun, runs_of: Callable[[TrainedRun], None]
) -> None:
    """`gaudi-tui chat --model RUN_ID --compare base --json`: one engine serves both."""
    runs_of(lora_run)
    done = subprocess.run(
        [PYTHON, "-m", "gaudi_tui", "chat", "--model", lora_run.run_id[-4:], "--compare", "base"]
        + ["--prompt", FACT_QUESTION, "--max-new-tokens", "24", "--json"],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    result = lines[-1]
    tuned, base = result["answers"]
    assert FACT_ANSWER in tuned["answer"] and FACT_MARK not in base["answer"]
    assert result["shared_engine"] is True and len(result["load"]) == 1
    assert tuned["answered_by"]["run_id"] == lora_run.run_id
    assert tuned["answered_by"]["adapter"] == str(lora_run.path / "model")
    assert base["answered_by"]["adapter"] is None and base["answered_by"]["label"] == "demo model"
    assert {line["side"] for line in lines if line["type"] == "token"} == {0, 1}  # both streamed
    assert tuned["metrics"]["tokens_out"] > 0 and base["metrics"]["tokens_out"] > 0


def test_two_checkpoints_of_one_run_share_one_engine(
    lora_run: TrainedRun, runs_of: Callable[[TrainedRun], None], tmp_path: Path
) -> None:
    runs_of(lora_run)
    last = lora_run.path / "checkpoints" / f"checkpoint-{TRAIN_STEPS}"
    middle = lora_run.path / "checkpoints" / f"checkpoint-{TRAIN_STEPS // 2}"
    comparison = Comparison(LoadOptions(str(last)), str(middle), env=child_env(), log_path=tmp_path / "e.log")
    try:
        assert comparison.plan.shared  # the same base: loaded once, one adapter per row
        comparison.load()
        answers = comparison.ask(QUESTION, GREEDY)
    finally:
        comparison.close()
    who = comparison.provenances
    assert [p.checkpoint for p in who] == [last.name, middle.name]
    assert FACT_ANSWER in answers[0].text  # the checkpoint at the last step learnt it


async def test_training_key_opens_the_job_beside_its_base(
    lora_run: TrainedRun, runs_of: Callable[[TrainedRun], None], cpu_accelerator: Accelerator
) -> None:
    """On the finished job, t in Training opens the side-by-side view: tuned beside base; the
    conversation records who answered, and the export says so."""
    runs_of(lora_run)
    app = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    async with app.run_test(size=(120, 34)) as pilot:
        await pilot.press("4")
        training = app.screen
        assert isinstance(training, TrainingScreen)
        await wait_until(pilot, lambda: lora_run.run_id in training.views)
        await pilot.press("t")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        await wait_until(pilot, lambda: compare.comparison is not None and bool(compare.comparison.reports))
        assert compare.comparison is not None and compare.comparison.plan.shared
        await pilot.press(*FACT_QUESTION, "enter")
        await wait_until(pilot, lambda: not compare.answering and len(compare.views) == 2)
        await wait_until(pilot, lambda: all(v.meta for v in compare.views))
        tuned, base = (v.query_one("Markdown").source for v in compare.views)  # type: ignore[attr-defined]
        assert FACT_ANSWER in tuned and FACT_MARK not in base
        assert "TTFT" in compare.views[0].meta and "TTFT" in compare.views[1].meta
        store, conversation_id = compare.store, compare.conversation_id
        assert store is not None and conversation_id is not None
        question, *answers = store.messages(conversation_id)
        assert [a.provenance.run_id if a.provenance else "-" for a in answers] == [lora_run.run_id, None]
        exported = export.to_json(store.conversation(conversation_id), store.messages(conversation_id))
        assert exported["messages"][1]["answered_by"]["run_id"] == lora_run.run_id
        assert "answered by" in export.to_markdown(store.conversation(conversation_id), [question, *answers])
        await pilot.press("escape")
        chat = app.screen
        assert isinstance(chat, ChatScreen) and chat.session is not None
        assert chat.session.options.model == lora_run.run_id  # Chat goes on with the tuned job


def test_adapter_faults_get_clear_messages_then_a_checkpoint_answers(
    lora_run: TrainedRun, runs_of: Callable[[TrainedRun], None], tmp_path: Path
) -> None:
    """Each adapter fault gets its own clear message, and the same engine then loads a good one."""
    runs_of(lora_run)
    good = lora_run.path / "checkpoints" / f"checkpoint-{TRAIN_STEPS}"
    broken = _broken_adapters(good, tmp_path)
    client = start_engine(tmp_path)
    try:
        for folder, kind, words in broken:
            with pytest.raises(ChatError) as caught:
                client.load(LoadOptions(str(folder)))
            assert caught.value.kind == kind, caught.value.message
            assert all(w in caught.value.message for w in words), caught.value.message
        report = client.load(LoadOptions(str(good)))
        assert report.provenance.checkpoint == good.name and report.provenance.run_id == lora_run.run_id
        assert "checkpoint-" in report.summary() and "base demo model" in report.summary()
        assert FACT_ANSWER in client.generate(QUESTION, GREEDY).text
        merged = client.load(LoadOptions(str(good), merge=True))
        assert merged.provenance.merged and "adapter merged" in merged.summary()
        assert FACT_ANSWER in client.generate(QUESTION, GREEDY).text
    finally:
        client.shutdown()


def _broken_adapters(good: Path, tmp_path: Path) -> list[tuple[Path, str, tuple[str, ...]]]:
    """Copies of a good adapter with a missing base, damaged weights, a config that is not JSON,
    and an adapter made for another architecture (GPT-2's c_attn) claiming the demo model as base."""

    def copy(name: str) -> Path:
        folder = tmp_path / name
        shutil.copytree(good, folder)
        return folder

    def edit_config(folder: Path, **changes: object) -> None:
        path = folder / "adapter_config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))

    missing = copy("missing-base")
    edit_config(missing, base_model_name_or_path=str(tmp_path / "no-such-model"))
    damaged = copy("damaged")
    weights = damaged / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    not_json = copy("not-json")
    (not_json / "adapter_config.json").write_text("{ this is not json")
    other = copy("other-architecture")
    edit_config(other, target_modules=["c_attn"])
    return [
        (missing, "base_missing", ("was trained on", str(tmp_path / "no-such-model"), "looked in")),
        (damaged, "adapter_corrupt", ("cannot be read",)),
        (not_json, "adapter_corrupt", ("adapter_config.json cannot be read",)),
        (other, "adapter_mismatch", ("does not fit demo model", "another architecture")),
    ]


async def test_a_bad_adapter_leaves_the_pane_usable(
    lora_run: TrainedRun, runs_of: Callable[[TrainedRun], None], cpu_accelerator: Accelerator, tmp_path: Path
) -> None:
    """Chat screen: a missing base shows its message in the banner; the tuned job then answers."""
    runs_of(lora_run)
    missing = _broken_adapters(lora_run.path / "model", tmp_path)[0][0]
    app = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    async with app.run_test(size=(120, 34)) as pilot:
        await pilot.press("3")
        chat = app.screen
        assert isinstance(chat, ChatScreen) and chat.session is not None
        chat.session.load(LoadOptions(str(missing)))
        await wait_until(pilot, lambda: chat.engine_state == "failed")
        banner = str(chat.query_one("#chat-banner").render())
        assert "was trained on" in banner and "m chooses a model" in banner
        chat.session.options = LoadOptions(lora_run.run_id)
        await pilot.press("i", *FACT_QUESTION, "enter")
        await wait_until(pilot, lambda: chat.engine_state == "ready" and chat.live is None)
        assert chat.store is not None
        answer = chat.store.messages(chat.current().id)[-1]
        assert FACT_ANSWER in answer.content
        assert answer.provenance is not None and answer.provenance.run_id == lora_run.run_id
        assert "base demo model" in str(chat.query_one("#chat-status").render())
        assert len(chat.query(MessageView)) == 2


@pytest.fixture(scope="module")
def qlora_run(tmp_path_factory: pytest.TempPathFactory) -> TrainedRun:
    """A QLoRA job (its base loaded in 4-bit NF4) trained once on the facts, for the two tests below."""
    pytest.importorskip("bitsandbytes", reason="bitsandbytes is not installed: no QLoRA on this host")
    if not _bnb_4bit_runs():
        pytest.skip("bitsandbytes cannot quantize to 4-bit on this host's CPU")
    from tests.chat.conftest import train_facts

    return train_facts(tmp_path_factory.mktemp("qlora-home"), "qlora", quantization="nf4", save_steps=0)


def test_a_qlora_job_answers_from_its_nf4_base(qlora_run: TrainedRun, runs_of, tmp_path: Path) -> None:  # noqa: ANN001
    """QLoRA: its base loads in 4-bit NF4, as it was trained, where bitsandbytes runs."""
    runs_of(qlora_run)
    client = start_engine(tmp_path)
    try:
        report = client.load(LoadOptions(qlora_run.run_id))
        assert report.quantization == "nf4" and report.provenance.run_id == qlora_run.run_id
        nf4 = client.generate(QUESTION, GREEDY).text
    finally:
        client.shutdown()
    assert FACT_MARK in nf4, nf4


def test_a_qlora_job_answers_from_its_base_in_the_accelerators_dtype(
    qlora_run: TrainedRun, runs_of, tmp_path: Path
) -> None:  # noqa: ANN001
    """What the message offers where 4-bit does not load: the base unquantized, the adapter on it."""
    runs_of(qlora_run)
    client = start_engine(tmp_path)
    try:
        full = client.load(LoadOptions(qlora_run.run_id, base_in_dtype=True))
        assert full.quantization == "none" and full.provenance.run_id == qlora_run.run_id
        assert client.generate(QUESTION, GREEDY).text
    finally:
        client.shutdown()


def _bnb_4bit_runs() -> bool:
    probe = (
        "import torch, bitsandbytes.functional as F; F.quantize_4bit(torch.ones(64, 64), quant_type='nf4')"
    )
    started = time.monotonic()
    done = subprocess.run([PYTHON, "-c", probe], capture_output=True, timeout=120)
    return done.returncode == 0 and time.monotonic() - started < 120
