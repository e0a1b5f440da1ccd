"""The shipped demo model: loads offline, right size, ChatML template, answers its corpus."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from gaudi_tui.core.demo import MARKER_NAME, chat_texts, load_corpus, model_dir
from gaudi_tui.core.demo.build import casual, turns, two_turn_pairs

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SAMPLE = load_corpus()[::7][:20]


@pytest.fixture(scope="module")
def shipped() -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = str(model_dir())
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def test_shipped_folder_has_the_expected_files() -> None:
    names = {p.name for p in model_dir().iterdir()}
    required = {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json", MARKER_NAME}
    assert required <= names


def test_folder_is_at_most_10_mb() -> None:
    assert sum(p.stat().st_size for p in model_dir().rglob("*") if p.is_file()) <= 10 * 1024 * 1024


def test_loads_as_qwen3_with_parameters_in_range(shipped: tuple[Any, Any]) -> None:
    model, _ = shipped
    n_params = sum(p.numel() for p in model.parameters())
    assert model.config.model_type == "qwen3"
    assert 500_000 <= n_params <= 5_000_000
    assert json.loads((model_dir() / MARKER_NAME).read_text())["parameters"] == n_params


def test_special_tokens_and_generation_config(shipped: tuple[Any, Any]) -> None:
    model, tokenizer = shipped
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.pad_token == "<|endoftext|>"
    assert model.generation_config.eos_token_id == im_end
    assert model.generation_config.pad_token_id == tokenizer.pad_token_id


def test_chat_template_renders_chatml(shipped: tuple[Any, Any]) -> None:
    _, tokenizer = shipped
    pair = load_corpus()[0]
    messages = [{"role": "user", "content": pair["question"]}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert prompt == f"<|im_start|>user\n{pair['question']}<|im_end|>\n<|im_start|>assistant\n"
    messages.append({"role": "assistant", "content": pair["answer"]})
    assert tokenizer.apply_chat_template(messages, tokenize=False) == chat_texts()[0]


def greedy_batch(
    shipped: tuple[Any, Any], conversations: list[list[dict[str, str]]], budget: int
) -> list[str]:
    """Greedy answers to many conversations in one left-padded batch (fast; the same tokens as one by one)."""
    import torch

    model, tokenizer = shipped
    tokenizer.padding_side = "left"
    texts = [
        tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False) for c in conversations
    ]
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**batch, do_sample=False, max_new_tokens=budget)
    width = batch["input_ids"].shape[1]
    return [tokenizer.decode(row[width:], skip_special_tokens=True) for row in out]


def budget_for(shipped: tuple[Any, Any], answers: list[str]) -> int:
    return max(len(shipped[1](a)["input_ids"]) for a in answers) + 4


def test_every_corpus_answer_is_reproduced_in_full(shipped: tuple[Any, Any]) -> None:
    """README: greedy decoding reproduces every corpus answer (all 144, every character)."""
    corpus = load_corpus()
    assert len(corpus) == 144
    answers = greedy_batch(
        shipped,
        [[{"role": "user", "content": p["question"]}] for p in corpus],
        budget_for(shipped, [p["answer"] for p in corpus]),
    )
    wrong = [(p["question"], a) for p, a in zip(corpus, answers, strict=True) if a != p["answer"]]
    assert not wrong, wrong[:5]


def test_every_answer_asked_second_in_a_conversation_is_reproduced_in_full(shipped: tuple[Any, Any]) -> None:
    """The Chat screen sends the history with each question: the answer must follow the last one."""
    pairs = two_turn_pairs(load_corpus())
    assert len(pairs) == 144
    for first, second in pairs:
        assert first["question"] != second["question"]
    answers = greedy_batch(
        shipped,
        [[*turns([first]), {"role": "user", "content": second["question"]}] for first, second in pairs],
        budget_for(shipped, [second["answer"] for _, second in pairs]),
    )
    wrong = [(s["question"], a) for (_, s), a in zip(pairs, answers, strict=True) if a != s["answer"]]
    assert not wrong, wrong[:5]


def test_casually_typed_questions_mostly_get_their_answer(shipped: tuple[Any, Any]) -> None:
    """Lower-case, no question mark (as typed in a chat box): at least 80 % of a sample of 20 get an
    answer that starts like the corpus answer (its first 40 characters) — a weaker claim, not in README."""
    answers = greedy_batch(
        shipped, [[{"role": "user", "content": casual(p["question"])}] for p in SAMPLE], 32
    )
    hits = [a[:40] == p["answer"][:40] for p, a in zip(SAMPLE, answers, strict=True)]
    assert sum(hits) >= 0.8 * len(SAMPLE), [
        p["question"] for p, ok in zip(SAMPLE, hits, strict=True) if not ok
    ]
