"""The Stop request's stopping criterion: cheap per step, and still ending an answer within one token
(in-process, the demo model on the CPU)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

from gaudi_tui.core.chat.engine import loader
from gaudi_tui.core.chat.engine.generation import StopOnEvent, TokenStreamer, generate
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions


def test_each_step_gets_the_same_answer_tensor_not_a_new_one() -> None:
    event = threading.Event()
    stop = StopOnEvent(event)
    ids = torch.ones((2, 7), dtype=torch.long)
    running = stop(ids, None)
    assert running.dtype == torch.bool and running.tolist() == [False, False]
    assert stop(torch.ones((2, 8), dtype=torch.long), None) is running  # the next step: no tensor built
    event.set()
    done = stop(ids, None)
    assert done.tolist() == [True, True] and stop(ids, None) is done
    assert stop(torch.ones((3, 8), dtype=torch.long), None).tolist() == [True] * 3  # another batch
    event.clear()
    assert stop(ids, None) is running and running.tolist() == [False, False]  # never changed by use


@pytest.mark.parametrize("stop_at", [1, 5])
def test_a_stop_ends_the_answer_within_one_token(demo_path: Path, stop_at: int) -> None:
    loaded = loader.load(LoadOptions(model=str(demo_path)), loader.detect_accelerator(), lambda s: None)
    event = threading.Event()

    def on_token(n: int) -> None:
        if n == stop_at:
            event.set()

    streamer = TokenStreamer(loaded.tokenizer, on_token)
    params = GenerationParams(max_new_tokens=40, min_new_tokens=40)
    messages = [{"role": "user", "content": "What is hl-smi?"}]
    counts = generate(loaded, messages, params, event, lambda n, w: None, streamer)
    # transformers reports a token to the streamer after that step's stopping check: the stop set
    # while token n is reported is seen after token n + 1, never later
    assert counts.stopped and counts.tokens_out == stop_at + 1
