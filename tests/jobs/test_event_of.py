"""A metrics.jsonl line reads (orjson, then json for what orjson refuses) as json.loads reads it, but for
integers past 64 bits, which orjson reads as the nearest float."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gaudi_tui.core.jobs.summary import event_of

ODD_LINES = [
    b'{"event":"log","step":3,"loss":NaN}',  # a diverged loss, as json.dumps writes it
    b'{"event":"log","step":3,"loss":Infinity,"grad_norm":-Infinity}',
    b'{"event":"log","note":"\\ud800"}',  # a lone surrogate
    b'{"big":1e400}',
    b'\xef\xbb\xbf{"event":"log"}',  # a byte-order mark
    b'  {"event":"log","step":1}  \r',
    b'{"a":1,"a":2}',
    b'{"a":1}{"b":2}',
    b'\xff{"a":1}',
    b'{"a":"\xff"}',
    b"[1,2]",
    b"",
    b"nan",
    b'{"event":"log","step":1',
    b'{"x":1.0000000000000002,"y":5e-324,"z":-0.0}',
    '{"event":"log","who":"é✓"}'.encode(),
    '{"event":"log","who":"é✓"}',
]


def as_json_reads(line: bytes | str) -> dict | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def same(line: bytes | str) -> None:
    assert json.dumps(event_of(line)) == json.dumps(as_json_reads(line)), line


def test_an_integer_past_64_bits_reads_as_the_nearest_float() -> None:
    assert event_of(b'{"step":123456789012345678901234567890}') == {"step": 1.2345678901234568e29}


@pytest.mark.parametrize("line", ODD_LINES)
def test_odd_lines_read_as_json_reads_them(line: bytes | str) -> None:
    same(line)


values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), values, max_size=6), st.booleans())
def test_any_object_line_reads_as_json_reads_it(event: dict, ascii_only: bool) -> None:
    same(json.dumps(event, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"))
