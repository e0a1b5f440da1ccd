"""The demo builder, run on a small corpus for a few steps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gaudi_tui.core.demo import MARKER_NAME, corpus_sha256, is_demo_model, load_corpus
from gaudi_tui.core.demo.build import BATCH_SIZE, build, build_tokenizer, encode_conversation, main, turns

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in load_corpus()[:12]))
    return path


def test_smoke_build_writes_a_loadable_model_and_learns(tmp_path: Path, small_corpus: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path / "model"
    marker = build(out, steps=30, batch_size=8, corpus=small_corpus, evaluate=False, log=lambda _: None)
    assert is_demo_model(out)
    assert json.loads((out / MARKER_NAME).read_text()) == marker
    assert marker["corpus_sha256"] == corpus_sha256(small_corpus)
    assert marker["final_loss"] < marker["first_loss"]
    model = AutoModelForCausalLM.from_pretrained(str(out))
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    assert sum(p.numel() for p in model.parameters()) == marker["parameters"]
    assert tokenizer.chat_template


def test_build_is_deterministic_for_a_seed(tmp_path: Path, small_corpus: Path) -> None:
    weights = []
    for name in ("a", "b"):
        build(tmp_path / name, steps=5, batch_size=4, corpus=small_corpus, evaluate=False, log=lambda _: None)
        weights.append((tmp_path / name / "model.safetensors").read_bytes())
    assert weights[0] == weights[1]


def test_build_refuses_to_overwrite_a_foreign_folder(tmp_path: Path, small_corpus: Path) -> None:
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        build(tmp_path, steps=1, corpus=small_corpus, log=lambda _: None)
    assert (tmp_path / "notes.txt").read_text() == "keep me"


def test_cli_prints_progress_loss_and_accuracy(
    tmp_path: Path, small_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "model"
    assert main(["--out", str(out), "--steps", "5", "--seed", "3", "--corpus", str(small_corpus)]) == 0
    printed = capsys.readouterr().out
    assert "step 5/5 loss" in printed
    assert "final loss" in printed and "greedy accuracy" in printed and "multi-turn accuracy" in printed
    marker = json.loads((out / MARKER_NAME).read_text())
    assert marker["seed"] == 3 and marker["steps"] == 5 and 0 <= marker["greedy_accuracy"] <= 1
    assert 0 <= marker["multi_turn_accuracy"] <= 1 and marker["conversations"] == 5 * BATCH_SIZE


def test_conversation_loss_covers_every_answer_and_nothing_else() -> None:
    pairs = load_corpus()[:3]
    tokenizer = build_tokenizer([p["question"] + p["answer"] for p in pairs])
    ids, labels = encode_conversation(tokenizer, turns(pairs, system="Answer briefly."))
    assert len(ids) == len(labels)
    learned = tokenizer.decode([t for t in labels if t != -100])
    assert learned == "".join(f"{p['answer']}<|im_end|>\n" for p in pairs)
    skipped = tokenizer.decode([t for t, lab in zip(ids, labels, strict=True) if lab == -100])
    assert "Answer briefly." in skipped and all(p["question"] in skipped for p in pairs)
