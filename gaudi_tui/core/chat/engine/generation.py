"""One answer inside the engine: prompt from the conversation, streamed tokens, stop on request.

Runs only in the engine process (imports torch and transformers).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, cast

import torch
from transformers import StoppingCriteria, StoppingCriteriaList

from gaudi_tui.core.chat.engine.adapters import BASE_ROW
from gaudi_tui.core.chat.engine.loader import Loaded, context_length, pad_token_id
from gaudi_tui.core.chat.options import GenerationParams

WARMUP_TOKENS = 8
Message = Mapping[str, str]
OnToken = Callable[[int], None]
"""Called with the number of tokens generated so far, after each step."""

NO_TEMPLATE_WARNING = (
    "This model's tokenizer has no chat template, so the conversation is sent as a plain "
    "'User:/Assistant:' prompt; answers may ramble. Use an instruction-tuned model for chat."
)


@dataclass(frozen=True)
class Prompt:
    input_ids: list[int]
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TokenCounts:
    """How long the prompt and the answer were, and whether a stop request ended it."""

    tokens_in: int
    tokens_out: int
    stopped: bool


class TokenStreamer:
    """A `generate` streamer that reports every new token's count at once and decodes only when
    asked (`take`), so text is detokenised once per event sent, not once per token.

    Text is decoded from the tokens since the last newline, so multi-token characters and
    byte-level merges come out right; text that ends inside a character waits for the rest.
    """

    def __init__(self, tokenizer: Any, on_token: OnToken) -> None:
        self.tokenizer = tokenizer
        self.on_token = on_token
        self.count = 0
        self.made_at: float | None = None
        """When the newest token came out of the model (`time.monotonic`, one clock for every process
        of the host), so the decode rate is the model's, not when a busy reader got to the tokens."""
        self._prompt_seen = False
        self._ids: list[int] = []
        self._taken = 0

    def put(self, value: torch.Tensor) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        self.add(value.reshape(-1).tolist())

    def add(self, new: list[int]) -> None:
        self.made_at = time.monotonic()
        self.count += len(new)
        self._ids.extend(new)
        self.on_token(self.count)

    def take(self, final: bool = False) -> str:
        """The text the tokens add since the last take ("" while a character is incomplete,
        unless `final`)."""
        if not self._ids:
            return ""
        text = self.tokenizer.decode(self._ids, skip_special_tokens=True)
        if text.endswith("\ufffd") and not final:
            return ""
        delta = text[self._taken :]
        self._taken = len(text)
        if final or text.endswith("\n"):
            self._ids, self._taken = [], 0
        return delta

    def end(self) -> None:
        pass  # the caller takes the rest with take(final=True)


class RowStreamer:
    """The streamer of a batched generation (one row per model, same prompt): each row's tokens go to
    its own TokenStreamer; after its end-of-sequence token a row takes no more (the rest is padding)."""

    def __init__(self, rows: Sequence[TokenStreamer], eos: set[int]) -> None:
        self.rows = list(rows)
        self.eos = eos
        self.ended = [False] * len(self.rows)
        self._prompt_seen = False

    @property
    def count(self) -> int:
        return max(row.count for row in self.rows)

    def put(self, value: torch.Tensor) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        for i, token in enumerate(value.reshape(len(self.rows), -1)[:, -1].tolist()):
            if not self.ended[i]:
                self.ended[i] = token in self.eos
                self.rows[i].add([token])

    def end(self) -> None:
        pass


class StopOnEvent(StoppingCriteria):
    """Ends generation after the current step once `event` is set (the Stop request).

    Its two answers (all running, all done) are built once per batch shape and device and handed
    back every step: `generate` only ORs them into a new tensor, so a step costs an event check,
    not a tensor filled on the device (one more op a step on Gaudi)."""

    def __init__(self, event: threading.Event) -> None:
        self.event = event
        self._answers: dict[tuple[int, torch.device], tuple[torch.Tensor, torch.Tensor]] = {}

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        key = (input_ids.shape[0], input_ids.device)
        if key not in self._answers:
            running, done = (torch.full((key[0],), d, dtype=torch.bool, device=key[1]) for d in (False, True))
            self._answers[key] = (running, done)
        answers = self._answers[key]
        return cast(torch.BoolTensor, answers[self.event.is_set()])  # dtype=torch.bool makes it one


def plain_prompt(messages: Sequence[Message]) -> str:
    """The fallback for tokenizers without a chat template."""
    lines: list[str] = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "system":
            lines.append(f"{content}\n")
        else:
            lines.append(f"{'User' if role == 'user' else 'Assistant'}: {content}")
    lines.append("Assistant:")
    return "\n".join(lines)


def _render(tokenizer: Any, messages: Sequence[Message]) -> list[int]:
    if not getattr(tokenizer, "chat_template", None):
        return list(tokenizer(plain_prompt(messages))["input_ids"])
    try:
        text = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    except Exception:  # noqa: BLE001 - some templates refuse a system role: fold it into the first turn
        text = tokenizer.apply_chat_template(
            _fold_system(messages), tokenize=False, add_generation_prompt=True
        )
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _fold_system(messages: Sequence[Message]) -> list[dict[str, str]]:
    system = "\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [dict(m) for m in messages if m["role"] != "system"]
    if system and rest:
        rest[0]["content"] = f"{system}\n\n{rest[0]['content']}"
    return rest


def build_prompt(
    tokenizer: Any, messages: Sequence[Message], limit: int | None, max_new_tokens: int
) -> Prompt:
    """Apply the chat template (or the plain fallback); leave out the oldest turns when the
    conversation and room for the answer (up to half the context) do not fit, and say so."""
    warnings = [] if getattr(tokenizer, "chat_template", None) else [NO_TEMPLATE_WARNING]
    kept = list(messages)
    ids = _render(tokenizer, kept)
    dropped = 0
    budget = None if limit is None else max(limit - min(max_new_tokens, limit // 2), 1)
    while budget is not None and len(ids) > budget:
        turns = [i for i, m in enumerate(kept) if m["role"] != "system"]
        if len(turns) <= 1:
            warnings.append(
                f"The prompt is {len(ids)} tokens, too long for this model's context of {limit} "
                "tokens with room for an answer: shorten it."
            )
            break
        del kept[turns[0]]
        dropped += 1
        ids = _render(tokenizer, kept)
    if dropped:
        warnings.append(
            f"{dropped} older message(s) were left out to fit the model's context of {limit} tokens."
        )
    return Prompt(ids, warnings)


def generate(
    loaded: Loaded,
    messages: Sequence[Message],
    params: GenerationParams,
    stop: threading.Event,
    on_start: Callable[[int, list[str]], None],
    streamer: TokenStreamer | RowStreamer,
    rows: Sequence[int] = (0,),
) -> TokenCounts:
    """Stream one answer into `streamer`; `stop` ends it after the current token, keeping what
    was generated. `rows` picks which of the engine's models answer (`Loaded.rows`): one, with its
    adapter switched on (or off, `disable_adapter`, for the base), or several at once in one batch
    with an adapter per row (PEFT's mixed-adapter batch; a `RowStreamer` splits the rows)."""
    model, tokenizer = loaded.model, loaded.tokenizer
    limit = context_length(model.config, tokenizer)
    prompt = build_prompt(tokenizer, messages, limit, params.max_new_tokens)
    on_start(len(prompt.input_ids), prompt.warnings)
    ids = torch.tensor([prompt.input_ids] * len(rows), device=model.device)
    adapter_kwargs, switch = _adapter_switch(loaded, rows)
    if params.seed is not None:
        from transformers import set_seed

        set_seed(params.seed)
    kwargs = params.generate_kwargs()
    if limit is not None:  # never past the context: models with learned positions would fail
        kwargs["max_new_tokens"] = max(1, min(params.max_new_tokens, limit - len(prompt.input_ids)))
        kwargs["min_new_tokens"] = min(kwargs.get("min_new_tokens", 0), kwargs["max_new_tokens"])
    with torch.inference_mode(), switch:
        model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            streamer=streamer,
            stopping_criteria=StoppingCriteriaList([StopOnEvent(stop)]),
            pad_token_id=pad_token_id(tokenizer),
            **adapter_kwargs,
            **kwargs,
        )
    return TokenCounts(len(prompt.input_ids), streamer.count, stop.is_set())


def _adapter_switch(
    loaded: Loaded, rows: Sequence[int]
) -> tuple[dict[str, Any], AbstractContextManager[Any]]:
    """How `generate` is told which adapter answers: per row in a batch, or for the whole call."""
    from peft import PeftModel

    model, names = loaded.model, [loaded.rows[i] for i in rows]
    if not isinstance(model, PeftModel):  # a bare model, or an adapter merged into its base
        return {}, nullcontext()
    if len(names) > 1:
        return {"adapter_names": names}, nullcontext()
    if names[0] == BASE_ROW:
        return {}, model.disable_adapter()
    model.set_adapter(names[0])
    return {}, nullcontext()


def end_tokens(loaded: Loaded) -> set[int]:
    """The token ids that end an answer (the generation config's EOS, else the tokenizer's)."""
    eos = loaded.model.generation_config.eos_token_id
    if eos is None:
        eos = loaded.tokenizer.eos_token_id
    return set(eos if isinstance(eos, list) else [] if eos is None else [eos])


def warm_up(loaded: Loaded) -> float:
    """One short greedy answer through the same path as real ones; its time is the warm-up
    (and compile) cost the first question would otherwise pay."""
    started = time.perf_counter()
    generate(
        loaded,
        [{"role": "user", "content": "Hello"}],
        GenerationParams(max_new_tokens=WARMUP_TOKENS),
        threading.Event(),
        lambda tokens_in, warnings: None,
        TokenStreamer(loaded.tokenizer, lambda n: None),
    )
    return time.perf_counter() - started
