"""The shipped demo model: loads offline, right size, ChatML template, answers its corpus."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

from gaudi_tui.core.demo import MARKER_NAME, chat_texts, load_corpus, model_dir
from gaudi_tui.core.demo.build import casual, greedy_answer, turns, two_turn_pairs

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SAMPLE = load_corpus()[::7][:20]
TWO_TURN_SAMPLE = two_turn_pairs(load_corpus())[3::14][:10]


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


@pytest.mark.parametrize("typed", [str, casual], ids=["as-written", "casual"])
def test_greedy_answers_match_the_corpus(shipped: tuple[Any, Any], typed: Callable[[str], str]) -> None:
    import torch

    model, tokenizer = shipped
    hits = []
    for pair in SAMPLE:
        messages = [{"role": "user", "content": typed(pair["question"])}]
        inputs = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        with torch.no_grad():
            out = model.generate(**inputs, do_sample=False, max_new_tokens=32)
        answer = tokenizer.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        hits.append(answer[:40] == pair["answer"][:40])
    assert sum(hits) >= 0.8 * len(SAMPLE), [
        p["question"] for p, ok in zip(SAMPLE, hits, strict=True) if not ok
    ]


def test_second_question_of_a_conversation_gets_its_own_answer(shipped: tuple[Any, Any]) -> None:
    """The Chat screen sends the history with each question: the answer must follow the last one."""
    model, tokenizer = shipped
    assert len(TWO_TURN_SAMPLE) == 10
    misses = []
    for first, second in TWO_TURN_SAMPLE:
        assert first["question"] != second["question"]
        answer = greedy_answer(model, tokenizer, second["question"], 32, history=turns([first]))
        if answer[:40] != second["answer"][:40]:
            misses.append((first["question"], second["question"], answer))
    assert len(misses) <= 2, misses
