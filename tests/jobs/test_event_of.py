"""A metrics.jsonl line reads (core/untrusted/data) as json.loads reads it when it is an event a
reader can hold; a NaN or infinite figure reads as None; a line a reader cannot hold is skipped
(an integer past 64 bits, a lone surrogate, a step or time of the wrong kind)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gaudi_tui.core.jobs.summary import event_of

CHECKED = {"step", "time", "max_steps", "world_size", "graph_compilations", "checkpoint"}
"""The keys event_of checks (their own tests above); any other key reads as json reads it."""

ODD_LINES = [
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


def test_a_diverged_loss_reads_as_none() -> None:
    assert event_of(b'{"event":"log","step":3,"loss":NaN}') == {"event": "log", "step": 3, "loss": None}
    event = event_of(b'{"event":"log","step":3,"loss":Infinity,"grad_norm":-Infinity}')
    assert event == {"event": "log", "step": 3, "loss": None, "grad_norm": None}


SKIPPED = [
    b'{"step":123456789012345678901234567890}',  # past 64 bits
    b'{"event":"log","step":1,"loss":' + b"9" * 400 + b"}",
    b'{"event":"log","note":"\\ud800"}',  # a lone surrogate
    b'{"big":1e400}',
    b'{"event":"log","step":NaN,"loss":1.0}',
    b'{"event":"log","step":"7","loss":1.0}',
    b'{"event":"log","step":-1,"loss":1.0}',
    b'{"event":"log","step":1,"time":"noon"}',
    b'{"event":"log","step":1,"time":null}',
    b"[" * 100_000 + b"]" * 100_000,
]


@pytest.mark.parametrize("line", SKIPPED)
def test_a_line_no_reader_can_hold_is_skipped(line: bytes) -> None:
    assert event_of(line) is None


def test_side_figures_of_the_wrong_kind_are_dropped() -> None:
    line = b'{"event":"save","step":2.0,"time":5,"checkpoint":["x"],"max_steps":"9","world_size":true}'
    assert event_of(line) == {"event": "save", "step": 2, "time": 5.0}


@pytest.mark.parametrize("line", ODD_LINES)
def test_odd_lines_read_as_json_reads_them(line: bytes | str) -> None:
    same(line)


values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text().filter(lambda k: k not in CHECKED), values, max_size=6), st.booleans())
def test_any_object_line_reads_as_json_reads_it(event: dict, ascii_only: bool) -> None:
    same(json.dumps(event, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"))
