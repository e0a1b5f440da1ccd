"""The embedded demo model: a tiny Qwen3 chat model shipped with gaudi-tui so the panel works offline.

The model is trained by ``python -m gaudi_tui.core.demo.build`` on ``corpus.jsonl`` (questions and
answers about Gaudi, hl-smi and gaudi-tui). This module stays light: no torch or transformers imports.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

DEMO_MODEL_ID = "demo"
DEMO_LABEL = "demo model"
MARKER_NAME = "gaudi-tui-demo.json"

_HERE = Path(__file__).resolve().parent


def model_dir() -> Path:
    """The shipped folder of the trained demo model."""
    return _HERE / "model"


def corpus_path() -> Path:
    """The shipped question/answer corpus (JSON Lines)."""
    return _HERE / "corpus.jsonl"


def resolve_model(name_or_path: str) -> str:
    """Map "demo" (or an empty name) to the shipped model folder; return anything else unchanged."""
    if name_or_path.strip() in ("", DEMO_MODEL_ID):
        return str(model_dir())
    return name_or_path


def is_demo_model(path: str | Path) -> bool:
    """True when ``path`` is a folder written by the demo builder (it holds the marker file)."""
    return (Path(path) / MARKER_NAME).is_file()


def corpus_sha256(path: str | Path | None = None) -> str:
    """SHA-256 of the corpus file bytes, recorded in the marker to detect a stale model."""
    return hashlib.sha256(Path(path or corpus_path()).read_bytes()).hexdigest()


def load_corpus(path: str | Path | None = None) -> list[dict[str, str]]:
    """Read the corpus: one ``{"question": ..., "answer": ...}`` object per line; blank lines are skipped.

    Raises ValueError naming the file and line of the first malformed entry.
    """
    path = Path(path or corpus_path())
    pairs: list[dict[str, str]] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc.msg})") from exc
        if not isinstance(item, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(item).__name__}")
        for key in ("question", "answer"):
            value = item.get(key)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{where}: field {key!r} must be a non-empty string")
        pairs.append({"question": item["question"], "answer": item["answer"]})
    if not pairs:
        raise ValueError(f"{path}: the corpus is empty")
    return pairs


def starter_questions(count: int = 5, path: str | Path | None = None) -> list[str]:
    """`count` corpus questions spread over the corpus (its topics run in order): the questions the
    demo model can answer, offered in the Chat screen's empty state."""
    questions = [pair["question"] for pair in load_corpus(path)]
    step = max(len(questions) // count, 1)
    return questions[::step][:count]


def chat_text(question: str, answer: str) -> str:
    """One question/answer pair as a ChatML conversation, exactly as the demo chat template renders it."""
    return f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n{answer}<|im_end|>\n"


def chat_texts(path: str | Path | None = None) -> list[str]:
    """Every corpus pair rendered as a ChatML conversation (the demo fine-tune training texts)."""
    return [chat_text(p["question"], p["answer"]) for p in load_corpus(path)]
