"""The light part of the demo package: names, paths, corpus loading and ChatML texts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gaudi_tui.core.demo import (
    DEMO_MODEL_ID,
    MARKER_NAME,
    chat_texts,
    corpus_path,
    corpus_sha256,
    is_demo_model,
    load_corpus,
    model_dir,
    resolve_model,
)


def test_resolve_model_maps_demo_and_empty_to_the_shipped_folder() -> None:
    assert resolve_model(DEMO_MODEL_ID) == str(model_dir())
    assert resolve_model("") == str(model_dir())
    assert resolve_model("Qwen/Qwen3-0.6B") == "Qwen/Qwen3-0.6B"
    assert resolve_model("/models/my-model") == "/models/my-model"


def test_is_demo_model_needs_the_marker(tmp_path: Path) -> None:
    assert is_demo_model(model_dir())
    assert is_demo_model(str(model_dir()))
    assert not is_demo_model(tmp_path)
    assert not is_demo_model(tmp_path / "missing")
    (tmp_path / MARKER_NAME).write_text("{}")
    assert is_demo_model(tmp_path)


def test_shipped_corpus_is_large_distinct_and_short() -> None:
    pairs = load_corpus()
    questions = [p["question"] for p in pairs]
    assert len(pairs) >= 120
    assert len(set(questions)) == len(questions)
    assert all(len(p["answer"]) <= 200 for p in pairs)


def test_marker_matches_the_shipped_corpus() -> None:
    """Editing corpus.jsonl without rebuilding the model (python -m gaudi_tui.core.demo.build) fails here."""
    marker = json.loads((model_dir() / MARKER_NAME).read_text())
    assert marker["corpus_sha256"] == corpus_sha256(), "corpus.jsonl changed: run make demo-model"
    assert marker["pairs"] == len(load_corpus())
    assert {"steps", "final_loss", "parameters", "seed", "build_seconds"} <= marker.keys()


def test_chat_texts_are_chatml_conversations() -> None:
    first = load_corpus()[0]
    texts = chat_texts()
    assert len(texts) == len(load_corpus())
    assert texts[0] == (
        f"<|im_start|>user\n{first['question']}<|im_end|>\n"
        f"<|im_start|>assistant\n{first['answer']}<|im_end|>\n"
    )


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ('{"question": "q", "answer": ', "not valid JSON"),
        ('["q", "a"]', "expected a JSON object"),
        ('{"question": "q"}', "'answer' must be a non-empty string"),
        ('{"question": "", "answer": "a"}', "'question' must be a non-empty string"),
        ('{"question": "q", "answer": 3}', "'answer' must be a non-empty string"),
    ],
)
def test_load_corpus_names_the_bad_line(tmp_path: Path, bad_line: str, message: str) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"question": "q1", "answer": "a1"}\n\n' + bad_line + "\n")
    with pytest.raises(ValueError, match=rf"corpus\.jsonl:3: .*{message}"):
        load_corpus(path)


def test_load_corpus_rejects_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        load_corpus(path)


def test_importing_the_package_pulls_no_ml_stack() -> None:
    code = (
        "import sys, gaudi_tui.core.demo, gaudi_tui.core.demo.build\n"
        "heavy = {'torch', 'transformers', 'tokenizers', 'textual'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


def test_corpus_path_is_inside_the_package() -> None:
    assert corpus_path().parent == model_dir().parent
    assert corpus_path().is_file()
