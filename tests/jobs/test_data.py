"""Training text from each source: the demo corpus and local .txt/.jsonl/.csv/.parquet files."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from gaudi_tui.core.demo import chat_texts
from gaudi_tui.core.jobs.worker.data import DatasetError, load_texts, source_of

TEXTS = ["first example", "second, with a comma", 'third "quoted"']


def test_demo_corpus_is_the_demo_models_chat_texts() -> None:
    assert load_texts("demo", "text") == [t for t in chat_texts() if t.strip()]
    assert "<|im_start|>" in load_texts("demo", "text")[0]


def test_every_local_format_gives_the_same_rows(tmp_path: Path) -> None:
    (tmp_path / "d.txt").write_text("\n".join(TEXTS) + "\n\n")
    (tmp_path / "d.jsonl").write_text(
        "\n".join(json.dumps({"text": t, "id": i}) for i, t in enumerate(TEXTS))
    )
    pd.DataFrame({"text": TEXTS}).to_csv(tmp_path / "d.csv", index=False)
    pd.DataFrame({"text": TEXTS, "n": [1, 2, 3]}).to_parquet(tmp_path / "d.parquet")
    for name in ("d.txt", "d.jsonl", "d.csv", "d.parquet"):
        assert load_texts(str(tmp_path / name), "text") == TEXTS, name


def test_a_broken_line_deep_in_a_jsonl_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    lines = [json.dumps({"text": f"row {i}"}) for i in range(80)]
    lines[69] = '{"text": "unterminated'
    path.write_text("\n".join(lines))
    with pytest.raises(DatasetError, match="line 70 is not valid JSON"):
        load_texts(str(path), "text")


def test_non_text_values_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"text": 3}))
    with pytest.raises(DatasetError, match="holds int, not text"):
        load_texts(str(path), "text")


def test_an_empty_dataset_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.txt"
    path.write_text("\n\n")
    with pytest.raises(DatasetError, match="no non-empty text"):
        load_texts(str(path), "text")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("demo", "demo"),
        ("./data.csv", "file"),
        ("/x/y.parquet", "file"),
        ("data.jsonl", "file"),
        ("org/set", "hub"),
    ],
)
def test_source_kinds(text: str, kind: str) -> None:
    assert source_of(text).kind == kind
