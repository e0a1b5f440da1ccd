"""Training text: the demo corpus, a local .txt/.jsonl/.csv/.parquet file, or a Hub dataset.

`peek` reads only the first rows (to validate before launch, cheaply); `load_texts` reads all of
it inside the job. Both raise `DatasetError` with a message that says what to do.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SUFFIXES = (".txt", ".jsonl", ".json", ".csv", ".parquet")
PEEK_ROWS = 50

Kind = Literal["demo", "file", "hub"]


class DatasetError(ValueError):
    """The dataset cannot be used: missing, unreadable, wrong format, or lacking the text field."""


@dataclass(frozen=True)
class DatasetSource:
    kind: Kind
    location: str

    @property
    def label(self) -> str:
        return {"demo": "demo corpus", "file": "local file", "hub": "Hub dataset"}[self.kind]


def source_of(dataset: str) -> DatasetSource:
    """'demo' → the shipped corpus; something that looks like a path → a file; else a Hub id."""
    text = dataset.strip()
    if text.lower() in ("", "demo"):
        return DatasetSource("demo", "demo")
    path = Path(text).expanduser()
    looks_like_path = text.startswith(("/", ".", "~")) or path.suffix.lower() in SUFFIXES or path.exists()
    if looks_like_path:
        return DatasetSource("file", str(path.resolve()))
    return DatasetSource("hub", text)


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def peek(dataset: str, text_field: str) -> int:
    """Check the dataset's first rows hold text in `text_field`; returns how many rows were seen."""
    source = source_of(dataset)
    if source.kind == "demo":
        return len(_demo_texts()[:PEEK_ROWS])
    if source.kind == "hub":
        _check_hub(source.location)
        return 0
    path = Path(source.location)
    rows = _read_file(path, text_field, limit=PEEK_ROWS)
    return len(rows)


def load_texts(dataset: str, text_field: str) -> list[str]:
    """Every non-empty text of the dataset, in order."""
    source = source_of(dataset)
    if source.kind == "demo":
        texts = _demo_texts()
    elif source.kind == "hub":
        texts = _load_hub(source.location, text_field)
    else:
        texts = _read_file(Path(source.location), text_field, limit=None)
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise DatasetError(f"{dataset}: no non-empty text in field {text_field!r}")
    return texts


def _demo_texts() -> list[str]:
    from gaudi_tui.core.demo import chat_texts

    return list(chat_texts())


def _read_file(path: Path, text_field: str, limit: int | None) -> list[str]:
    if not path.exists():
        raise DatasetError(f"dataset file {path} does not exist: check the path")
    if not path.is_file():
        raise DatasetError(f"dataset {path} is not a file: give a .txt, .jsonl, .csv or .parquet file")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise DatasetError(
            f"dataset {path.name}: unknown format {suffix or '(no suffix)'}; use .txt (one example per "
            "line), .jsonl, .csv or .parquet"
        )
    try:
        if suffix == ".txt":
            return _read_txt(path, limit)
        if suffix in (".jsonl", ".json"):
            return _read_jsonl(path, text_field, limit)
        return _read_table(path, suffix, text_field, limit)
    except DatasetError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"dataset {path.name} cannot be read: {exc}") from None


def _read_txt(path: Path, limit: int | None) -> list[str]:
    texts: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            texts.append(line.rstrip("\n"))
            if limit is not None and len(texts) >= limit:
                break
    return texts


def _read_jsonl(path: Path, text_field: str, limit: int | None) -> list[str]:
    texts: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(
                    f"dataset {path.name} line {number} is not valid JSON ({exc.msg}): "
                    "each line must be one JSON object"
                ) from None
            texts.append(_field_of(row, text_field, f"{path.name} line {number}"))
            if limit is not None and len(texts) >= limit:
                break
    return texts


def _field_of(row: object, text_field: str, where: str) -> str:
    if not isinstance(row, dict):
        raise DatasetError(f"dataset {where} is not a JSON object")
    if text_field not in row:
        keys = ", ".join(map(str, row)) or "none"
        raise DatasetError(f"dataset {where} has no field {text_field!r} (fields: {keys}); set text_field")
    value = row[text_field]
    if not isinstance(value, str):
        raise DatasetError(f"dataset {where}: field {text_field!r} holds {type(value).__name__}, not text")
    return value


def _read_table(path: Path, suffix: str, text_field: str, limit: int | None) -> list[str]:
    import pandas as pd

    try:
        if suffix == ".csv":
            frame = pd.read_csv(path, nrows=limit, dtype=str, keep_default_na=False)
        else:
            import pyarrow.parquet as pq

            parquet = pq.ParquetFile(path)
            names = parquet.schema_arrow.names
            if text_field not in names:
                raise DatasetError(_missing_column(path, text_field, names))
            if limit is None:
                frame = pd.read_parquet(path, columns=[text_field])
            else:
                batch = next(parquet.iter_batches(batch_size=limit, columns=[text_field]), None)
                frame = batch.to_pandas() if batch is not None else pd.DataFrame({text_field: []})
    except DatasetError:
        raise
    except Exception as exc:  # noqa: BLE001 - pandas/pyarrow raise many types for a bad file
        raise DatasetError(f"dataset {path.name} cannot be read as {suffix[1:]}: {exc}") from None
    if text_field not in frame.columns:
        raise DatasetError(_missing_column(path, text_field, list(frame.columns)))
    column = frame[text_field]
    bad = column[~column.map(lambda v: isinstance(v, str))]
    if len(bad):
        raise DatasetError(
            f"dataset {path.name}: column {text_field!r} holds {type(bad.iloc[0]).__name__}, not text"
        )
    return column.tolist()


def _missing_column(path: Path, text_field: str, names: list[str]) -> str:
    listed = ", ".join(map(str, names)) or "none"
    return f"dataset {path.name} has no column {text_field!r} (columns: {listed}); set text_field"


def _check_hub(dataset_id: str) -> None:
    if hub_offline():
        raise DatasetError(
            f"{dataset_id!r} is not a local file and the Hub is offline (HF_HUB_OFFLINE=1): "
            "give a path to a .txt/.jsonl/.csv/.parquet file, or go online"
        )
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    try:
        HfApi().dataset_info(dataset_id, timeout=15)
    except RepositoryNotFoundError:
        raise DatasetError(f"no Hub dataset {dataset_id!r} (or it is private): check the id") from None
    except (HfHubHTTPError, OSError) as exc:
        raise DatasetError(f"cannot reach the Hub to check {dataset_id!r}: {exc}") from None


def _load_hub(dataset_id: str, text_field: str) -> list[str]:
    _check_hub(dataset_id)
    from datasets import load_dataset

    rows = load_dataset(dataset_id, split="train")
    if text_field not in rows.column_names:
        raise DatasetError(
            f"Hub dataset {dataset_id} has no column {text_field!r} "
            f"(columns: {', '.join(rows.column_names)}); set text_field"
        )
    return [str(v) for v in rows[text_field]]
