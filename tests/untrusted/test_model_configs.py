"""A local model's config.json (the job form's check of max_seq_len: `validate.sources`) and an
adapter's adapter_config.json (Chat's model dialog: `trained.resolve`) are files anyone may have
copied here: every hostile case of the catalogue (tests/untrusted/cases.py) gives a clear answer in
bounded memory and time. Before they were read through `untrusted.files.load_json`, 100,000 nested
brackets raised RecursionError out of both, and a 100 MiB line was held whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaudi_tui.core.chat import trained
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.jobs import validate
from gaudi_tui.core.untrusted.data import INT_MAX
from tests.untrusted.cases import CASES, FILE_CASES, WHOLE, assert_bounded, write_case

DAMAGED = {"nested_100000", "nested_open_100000", "invalid_utf8", "lone_surrogate_raw",
           "lone_surrogate_escape", "digits_400", "float_400_digits", "digits_4300", "digits_5000",
           "line_100mib_no_end", "truncated", "nan", "infinity", "minus_infinity"}  # fmt: skip
"""Cases the one reader refuses as a whole file (untrusted.data: past 64 bits, not finite, not text,
too deep, too long); the others are a readable file with an odd value."""


def _write(path: Path, key: bytes, case_name: str) -> None:
    if case_name in WHOLE:
        write_case(path, b"", CASES[case_name])
    else:
        write_case(path, b'{"model_type": "llama", "' + key + b'": ', CASES[case_name], b"}")


@pytest.mark.parametrize("case_name", FILE_CASES)
def test_a_hostile_model_config_gives_no_limit_and_raises_nothing(case_name: str, tmp_path: Path) -> None:
    _write(tmp_path / "config.json", b"max_position_embeddings", case_name)
    limit = assert_bounded(lambda: validate._max_positions(str(tmp_path)), errors=())
    assert limit is None or (isinstance(limit, int) and 0 < limit <= INT_MAX), limit
    if case_name in DAMAGED:
        assert limit is None


@pytest.mark.parametrize("case_name", FILE_CASES)
def test_a_hostile_adapter_config_is_said_to_be_corrupt(case_name: str, tmp_path: Path) -> None:
    _write(tmp_path / trained.ADAPTER_CONFIG, b"r", case_name)
    (tmp_path / trained.ADAPTER_WEIGHTS[0]).write_bytes(b"")
    answer = assert_bounded(lambda: trained.resolve(str(tmp_path)), errors=(ChatError,))
    if case_name in DAMAGED:
        assert isinstance(answer, ChatError) and answer.kind == "adapter_corrupt", answer
    else:  # a readable file whose base is not named: said so, not "corrupt"
        assert isinstance(answer, ChatError) and answer.kind == "base_missing", answer
