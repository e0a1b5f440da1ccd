"""Build the demo model: byte-level BPE tokenizer, tiny Qwen3, a plain torch training loop, save.

Run ``python -m gaudi_tui.core.demo.build [--out DIR] [--steps N] [--seed S] [--corpus FILE]``. The result is
deterministic for a given seed and corpus, and ``gaudi-tui-demo.json`` records how it was made.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gaudi_tui.core.demo import (
    MARKER_NAME,
    chat_text,
    corpus_path,
    corpus_sha256,
    is_demo_model,
    load_corpus,
    model_dir,
)

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

ENDOFTEXT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
VOCAB_SIZE = 2048
MODEL_SHAPE: dict[str, Any] = {
    "hidden_size": 128,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
}
DEFAULT_STEPS = 600
BATCH_SIZE = 12
LEARNING_RATE = 3e-3
WARMUP_FRACTION = 0.05
MATCH_CHARS = 40
MAX_TURNS = 3
CONVERSATIONS = 2000
SYSTEM_PROMPTS = ("Answer briefly.", "You are a helpful assistant.", "You help people run Intel Gaudi cards.")
SYSTEM_SHARE = 0.25

Example = tuple[list[int], list[int]]
Message = dict[str, str]


def build_tokenizer(texts: Sequence[str]) -> PreTrainedTokenizerBase:
    """Train a byte-level BPE on ``texts`` and wrap it with the ChatML template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=[ENDOFTEXT, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
        model_max_length=256,
        model_input_names=["input_ids", "attention_mask"],
    )


def save_tokenizer(tokenizer: PreTrainedTokenizerBase, out: Path) -> None:
    """Save the tokenizer under a class name that transformers 4.x also resolves."""
    tokenizer.save_pretrained(out)
    config_path = out / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def build_model(tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    """A freshly initialised tiny Qwen3 with tied embeddings (seed torch first for determinism)."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=len(tokenizer),
        max_position_embeddings=256,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **MODEL_SHAPE,
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = None
    return model


def turns(pairs: Sequence[dict[str, str]], system: str = "") -> list[Message]:
    """Consecutive user/assistant turns, one per pair, after an optional system turn."""
    messages = [{"role": "system", "content": system}] if system else []
    for pair in pairs:
        messages += [
            {"role": "user", "content": pair["question"]},
            {"role": "assistant", "content": pair["answer"]},
        ]
    return messages


def encode_conversation(tokenizer: PreTrainedTokenizerBase, messages: Sequence[Message]) -> Example:
    """Token ids and labels of a conversation; the loss covers every assistant answer and its ``<|im_end|>``."""

    def render(upto: int, prompt: bool) -> list[int]:
        text = tokenizer.apply_chat_template(
            list(messages[:upto]), add_generation_prompt=prompt, tokenize=False
        )
        return tokenizer(text)["input_ids"]

    ids = render(len(messages), False)
    labels = [-100] * len(ids)
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        prompt, upto = render(i, True), render(i + 1, False)
        if ids[: len(prompt)] != prompt or ids[: len(upto)] != upto:
            raise ValueError(
                f"prompt tokens are not a prefix of the conversation: {messages[i - 1]['content']!r}"
            )
        labels[len(prompt) : len(upto)] = upto[len(prompt) :]
    return ids, labels


def encode_pairs(tokenizer: PreTrainedTokenizerBase, pairs: Sequence[dict[str, str]]) -> list[Example]:
    """One single-turn example per pair."""
    return [encode_conversation(tokenizer, turns([pair])) for pair in pairs]


def sample_conversations(
    pairs: Sequence[dict[str, str]], count: int, seed: int, max_turns: int = MAX_TURNS
) -> list[list[Message]]:
    """``count`` random conversations of 2 to ``max_turns`` different pairs, questions as written or casual,
    a quarter of them after a system prompt (the Chat screen sends the whole history with each question)."""
    rng = random.Random(seed)
    conversations = []
    for _ in range(count):
        chosen = rng.sample(range(len(pairs)), min(len(pairs), rng.randint(2, max_turns)))
        typed = [
            {
                **pairs[i],
                "question": casual(pairs[i]["question"]) if rng.random() < 0.5 else pairs[i]["question"],
            }
            for i in chosen
        ]
        system = rng.choice(SYSTEM_PROMPTS) if rng.random() < SYSTEM_SHARE else ""
        conversations.append(turns(typed, system))
    return conversations


def two_turn_pairs(pairs: Sequence[dict[str, str]]) -> list[tuple[dict[str, str], dict[str, str]]]:
    """Each pair asked second, after a different pair (half the corpus away) asked first."""
    n = len(pairs)
    return [(pairs[(i + n // 2 + 1) % n], pairs[i]) for i in range(n)] if n > 1 else []


def casual(question: str) -> str:
    """A question as people type it in a chat box: lower-case first letter, no question mark."""
    question = question.rstrip("?")
    return question[:1].lower() + question[1:]


def collate(examples: Sequence[Example], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a batch; padding is masked out of attention and loss."""
    import torch

    width = max(len(ids) for ids, _ in examples)
    ids = [ids + [pad_id] * (width - len(ids)) for ids, _ in examples]
    labels = [lab + [-100] * (width - len(lab)) for _, lab in examples]
    mask = [[1] * len(i) + [0] * (width - len(i)) for i, _ in examples]
    return {
        "input_ids": torch.tensor(ids),
        "labels": torch.tensor(labels),
        "attention_mask": torch.tensor(mask),
    }


def train(
    model: PreTrainedModel,
    examples: Sequence[Example],
    pad_id: int,
    steps: int,
    seed: int,
    batch_size: int = BATCH_SIZE,
    log: Callable[[str], None] = print,
    log_every: int = 50,
) -> list[float]:
    """AdamW with linear warmup and cosine decay over shuffled epochs; returns the loss of every step."""
    import torch

    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
    warmup = max(1, int(steps * WARMUP_FRACTION))

    def lr_factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
    order: list[int] = []
    losses = []
    model.train()
    for step in range(steps):
        if len(order) < batch_size:
            order += rng.sample(range(len(examples)), len(examples))
        batch = collate([examples[i] for i in order[:batch_size]], pad_id)
        del order[:batch_size]
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if (step + 1) % log_every == 0 or step + 1 == steps:
            log(f"step {step + 1}/{steps} loss {losses[-1]:.4f} lr {scheduler.get_last_lr()[0]:.2e}")
    model.eval()
    return losses


def greedy_answer(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    question: str,
    max_new_tokens: int = 64,
    history: Sequence[Message] = (),
) -> str:
    """The model's greedy answer to one question after ``history``, through the chat template."""
    import torch

    ids: Any = tokenizer.apply_chat_template(  # a BatchEncoding (return_dict=True)
        [*history, {"role": "user", "content": question}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    with torch.no_grad():
        out = model.generate(**ids, do_sample=False, max_new_tokens=max_new_tokens)  # type: ignore[operator]  # GenerationMixin's, not shown by the PreTrainedModel annotation
    text = tokenizer.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
    assert isinstance(text, str)  # one sequence decodes to one string
    return text


def greedy_accuracy(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    pairs: Sequence[dict[str, str]],
    firsts: Sequence[dict[str, str]] | None = None,
) -> float:
    """Share of pairs whose greedy answer starts with the first 40 characters of the corpus answer;
    with ``firsts``, each question is asked second, after the matching first pair's question and answer."""
    hits = 0
    for k, pair in enumerate(pairs):
        target = pair["answer"][:MATCH_CHARS]
        budget = len(tokenizer(target)["input_ids"]) + 2
        history = turns([firsts[k]]) if firsts else []
        hits += greedy_answer(model, tokenizer, pair["question"], budget, history)[:MATCH_CHARS] == target
    return hits / len(pairs)


def build(
    out: Path,
    steps: int = DEFAULT_STEPS,
    seed: int = 0,
    batch_size: int = BATCH_SIZE,
    corpus: Path | None = None,
    evaluate: bool = True,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train and save the demo model into ``out``; return the marker written there.

    ``final_loss`` in the marker is the mean of the last 10 steps.
    """
    import torch

    out = Path(out)
    if out.exists() and any(out.iterdir()) and not is_demo_model(out):
        raise FileExistsError(f"{out} is not empty and holds no demo model; refusing to overwrite it")
    started = time.perf_counter()
    corpus = Path(corpus or corpus_path())
    pairs = load_corpus(corpus)
    torch.manual_seed(seed)
    texts = [chat_text(p["question"], p["answer"]) for p in pairs]
    tokenizer = build_tokenizer(texts)
    model = build_model(tokenizer)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"corpus {len(pairs)} pairs, vocab {len(tokenizer)}, {n_params:,} parameters, {steps} steps")
    # Train on each question as written and as typed casually, so "what is hl-smi" works too.
    casual_pairs = [{**p, "question": casual(p["question"])} for p in pairs]
    # And on conversations of several pairs, so the second question of a chat gets its own answer.
    wanted = min(CONVERSATIONS, steps * batch_size)  # no more than training can draw
    conversations = sample_conversations(pairs, wanted, seed) if len(pairs) > 1 else []
    examples = encode_pairs(tokenizer, [*pairs, *casual_pairs])
    examples += [encode_conversation(tokenizer, c) for c in conversations]
    losses = train(model, examples, tokenizer.pad_token_id, steps, seed, batch_size, log)
    final_loss = sum(losses[-10:]) / len(losses[-10:])
    if out.exists():
        shutil.rmtree(out)
    model.save_pretrained(out)
    save_tokenizer(tokenizer, out)
    marker = {
        "corpus_sha256": corpus_sha256(corpus),
        "pairs": len(pairs),
        "steps": steps,
        "batch_size": batch_size,
        "seed": seed,
        "conversations": len(conversations),
        "first_loss": round(losses[0], 4),
        "final_loss": round(final_loss, 4),
        "parameters": n_params,
    }
    if evaluate:
        marker["greedy_accuracy"] = round(greedy_accuracy(model, tokenizer, pairs), 4)
        if len(pairs) > 1:
            firsts, seconds = zip(*two_turn_pairs(pairs), strict=True)
            marker["multi_turn_accuracy"] = round(greedy_accuracy(model, tokenizer, seconds, firsts), 4)
    marker["build_seconds"] = round(time.perf_counter() - started, 1)
    (out / MARKER_NAME).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    for path in out.iterdir():
        path.chmod(0o644)  # the weights are written 0600; the shipped folder must be world-readable
    return marker


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description="Train and save the gaudi-tui demo model.")
    parser.add_argument(
        "--out", type=Path, default=model_dir(), help="output folder (default: the shipped one)"
    )
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="training steps")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--corpus", type=Path, default=corpus_path(), help="question/answer JSON Lines file")
    args = parser.parse_args(argv)
    marker = build(
        args.out,
        steps=args.steps,
        seed=args.seed,
        corpus=args.corpus,
        log=lambda line: print(line, flush=True),
    )
    print(f"final loss {marker['final_loss']:.4f}, greedy accuracy {marker['greedy_accuracy']:.1%}")
    if "multi_turn_accuracy" in marker:
        print(f"multi-turn accuracy {marker['multi_turn_accuracy']:.1%} (second question of two)")
    print(f"saved to {args.out} in {marker['build_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
