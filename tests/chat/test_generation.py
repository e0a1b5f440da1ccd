"""Prompt building and token streaming with the demo model's real tokenizer (in-process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gaudi_tui.core.chat.engine.generation import (
    NO_TEMPLATE_WARNING,
    TokenStreamer,
    build_prompt,
    plain_prompt,
)


@pytest.fixture(scope="module")
def tokenizer(demo_path: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(demo_path)


def test_chat_template_is_applied(tokenizer: Any) -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is hl-smi?"}]
    prompt = build_prompt(tokenizer, messages, limit=256, max_new_tokens=64)
    text = tokenizer.decode(prompt.input_ids)
    assert (
        text
        == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is hl-smi?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert prompt.warnings == []


def test_plain_prompt_fallback_warns(tokenizer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokenizer, "chat_template", None)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    prompt = build_prompt(tokenizer, messages, limit=256, max_new_tokens=64)
    assert tokenizer.decode(prompt.input_ids) == "Be brief.\n\nUser: Hi\nAssistant:"
    assert plain_prompt(messages) == "Be brief.\n\nUser: Hi\nAssistant:"
    assert prompt.warnings == [NO_TEMPLATE_WARNING]


def test_oldest_turns_leave_to_fit_the_context(tokenizer: Any) -> None:
    long = "Gaudi memory " * 20
    messages = [{"role": "system", "content": "Be brief."}]
    for i in range(4):
        messages += [{"role": "user", "content": f"{i} {long}"}, {"role": "assistant", "content": long}]
    messages.append({"role": "user", "content": "last question"})
    prompt = build_prompt(tokenizer, messages, limit=256, max_new_tokens=64)
    assert len(prompt.input_ids) <= 256 - 64
    text = tokenizer.decode(prompt.input_ids)
    assert text.startswith("<|im_start|>system\nBe brief.") and "last question" in text
    assert "0 Gaudi" not in text
    assert any("older message(s) were left out" in w and "256 tokens" in w for w in prompt.warnings)


MULTI_BYTE = "Ünïcode ✓ 文字 and newlines\nsecond line: HBM2E 🚀"


@pytest.mark.parametrize("every", [1, 2, 3, 7])
def test_streamer_counts_every_token_and_decodes_only_when_taken(tokenizer: Any, every: int) -> None:
    """Byte-level BPE splits multi-byte characters across tokens: whatever the batching, the
    taken pieces never hold half a character and join to the exact text."""
    import torch

    ids = tokenizer(MULTI_BYTE, add_special_tokens=False)["input_ids"]
    assert any(tokenizer.decode(ids[:i]).endswith("\ufffd") for i in range(1, len(ids))), "no split char"
    counts: list[int] = []
    streamer = TokenStreamer(tokenizer, counts.append)
    streamer.put(torch.tensor([[1, 2, 3]]))  # the prompt: not counted
    pieces: list[str] = []
    for i, token in enumerate(ids, start=1):
        streamer.put(torch.tensor([token]))
        if i % every == 0:
            pieces.append(streamer.take())
    pieces.append(streamer.take(final=True))
    assert counts == list(range(1, len(ids) + 1)) and streamer.count == len(ids)
    assert not any("\ufffd" in piece for piece in pieces)
    assert "".join(pieces) == MULTI_BYTE
    assert streamer.take(final=True) == ""
