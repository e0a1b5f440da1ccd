"""core/untrusted/data: well-formed JSON within its bounds reads as json.loads reads it (hypothesis),
and every hostile case of the catalogue is refused with an `Untrusted` that never quotes the input."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gaudi_tui.core.untrusted.data import INT_MAX, INT_MIN, MAX_DEPTH, Untrusted, integer, loads, number, text
from tests.untrusted.cases import CASES, NESTING

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(INT_MIN, INT_MAX)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_documents = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_documents)
def test_well_formed_json_reads_as_json_reads_it(value: object) -> None:
    raw = json.dumps(value)
    assert loads(raw) == json.loads(raw)
    assert loads(raw.encode("utf-8")) == json.loads(raw)


@given(st.integers(INT_MIN, INT_MAX), st.floats(allow_nan=False, allow_infinity=False))
def test_numbers_in_range_come_back(whole: int, real: float) -> None:
    assert integer(whole) == whole and number(real) == real
    assert number(whole) == float(whole)


REFUSED = {
    name: CASES[name]
    for name in (
        "nan",
        "infinity",
        "minus_infinity",
        "digits_400",
        "digits_4300",
        "digits_5000",
        "float_400_digits",
        "nested_100000",
        "nested_open_100000",
        "invalid_utf8",
        "lone_surrogate_escape",
        "lone_surrogate_raw",
        "truncated",
    )
}


@pytest.mark.parametrize("nonfinite", [False, True])
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_hostile_json_is_refused_with_its_own_error(name: str, nonfinite: bool) -> None:
    case = REFUSED[name]
    assert isinstance(case, bytes)
    document = b'{"loss": ' + case + b"}"
    if nonfinite and name in ("nan", "infinity", "minus_infinity"):
        assert loads(document, nonfinite=True) == {"loss": None}  # a diverged loss is still a line
        return
    with pytest.raises(Untrusted) as caught:
        loads(document, what="metrics.jsonl line", nonfinite=nonfinite)
    message = str(caught.value)
    assert message.startswith("metrics.jsonl line ") and len(message) < 200  # says what, not the input


def test_nesting_is_bounded_but_ordinary_depth_reads() -> None:
    deep_ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads(deep_ok) is not None
    with pytest.raises(Untrusted, match="nests"):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(Untrusted):
        loads("[" * NESTING + "NaN" + "]" * NESTING, nonfinite=True)  # the json fallback too


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, None), ("7", None), (math.nan, None), (math.inf, None), (10**400, None), (1.5, 1.5), (3, 3.0)],
)
def test_number_takes_only_finite_numbers(value: object, expected: float | None) -> None:
    assert number(value) == expected


def test_integer_and_text_take_only_their_kind() -> None:
    assert integer(7.0) == 7 and integer(7.5) is None and integer("7") is None and integer(False) is None
    assert integer(10**30) is None and integer(5, lo=0, hi=4) is None
    assert text("abc", max_chars=2) == "ab" and text(7) is None and text("\ud800") is None


@pytest.mark.parametrize("digits", ["9223372036854775808", "18446744073709551615"])
def test_an_integer_just_past_64_bits_is_refused_in_a_large_answer(digits: str) -> None:
    """orjson reads integers up to 2^64 - 1: `loads` skips its walk of every value only where no run
    of 19 digits could hold one, so each of these is still refused, amid many ordinary values."""
    series = [
        {"metric": {"instance": f"h{i}:41612", "id": str(i % 8)}, "value": [1.5, "3"]} for i in range(500)
    ]
    document = json.dumps({"status": "success", "data": {"result": series, "count": 0}})
    assert loads(document)["data"]["result"] == series  # type: ignore[index]
    with pytest.raises(Untrusted, match="64 bits"):
        loads(document.replace('"count": 0', f'"count": {digits}'))
    padded = {"serial": "1234567890123456789012", "n": INT_MAX, "m": INT_MIN}
    assert loads(json.dumps(padded)) == padded  # a long run of digits: the whole walk, same answer


@pytest.mark.parametrize("inner", ["1", '"]]"', '"\\u005d"', '""', '{"k": "["}'])
def test_the_depth_read_from_the_brackets_is_the_depth_the_walk_finds(inner: str) -> None:
    """`loads` reads the nesting from the brackets where it can (no escape, no bracket in a string)
    and walks the value elsewhere: both bound it alike, lists and objects mixed."""
    extra = 1 if inner.startswith("{") else 0
    for opening, closing in (("[", "]"), ('{"k": ', "}"), ('[{"k": ', "}]")):
        levels = len(opening.replace('"k": ', ""))
        depth = (MAX_DEPTH - extra) // levels
        ok = opening * depth + inner + closing * depth
        assert loads(ok) is not None
        with pytest.raises(Untrusted, match="nests"):  # one level more: past MAX_DEPTH
            loads(opening * (depth + 1) + inner + closing * (depth + 1))
