"""A Prometheus instant-vector answer read straight from its bytes, by the rules of `data.loads`.

The Fleet screen's answers are thousands of results of one shape (`{"metric":{"a":"…","b":"…"},
"value":[time,"number"]}`); building a JSON object for each was most of a refresh's cost. `pairs`
reads the two labels and the value of each result with one pattern, where the answer is exactly in
the form Prometheus writes: `HEAD`, the results, `TAIL`, no escape anywhere, every result matched.
Any other answer gives None, and the caller reads it with `data.loads` and `results`. `keyed` reads
an answer of a few thousand results that become a few numbers (a host's free cards) without a
string or a float for each: its label values stay UTF-8 bytes (the whole answer is checked to be
UTF-8) and its values the text Prometheus wrote, read by `number` where they are used. All keep the
untrusted reader's rules: label values are UTF-8 text, a value is a number Prometheus writes
(digits, `.`, an exponent, `NaN`, `±Inf`) and only a finite one is kept (the others are counted as
skipped), nothing nests (the pattern matches no bracket inside a result), and the answer's size is
the HTTP client's cap.
"""

from __future__ import annotations

import functools
import math
import re
from itertools import chain
from operator import itemgetter
from typing import NamedTuple

from gaudi_tui.core.untrusted.data import Untrusted

HEAD = b'{"status":"success","data":{"resultType":"vector","result":['
TAIL = b"]}}"
_LABEL = rb'"([^"\\]*)"'
_VALUE = rb'"([-+.0-9eEINafn]+)"'
"""The characters of a number as Prometheus writes one: `12`, `-1.5e+06`, `NaN`, `+Inf`."""
_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?Inf|NaN")

Triple = tuple[str, str, float]


class Pairs(NamedTuple):
    """What `pairs` read: (`one`, `other`, value) of each result whose value is finite, and how many
    results were skipped (a value NaN or infinite)."""

    values: list[Triple]
    skipped: int


@functools.cache
def _result(first: str, second: str) -> re.Pattern[bytes]:
    """One result with the labels `first` < `second` (Prometheus writes labels in name order)."""
    labels = (
        rb'\{"metric":\{"' + first.encode() + rb'":' + _LABEL + rb',"' + second.encode() + rb'":' + _LABEL
    )
    return re.compile(labels + rb'\},"value":\[[^,\]"]*,' + _VALUE + rb"\]\}")


def _plain(body: bytes) -> bool:
    """Framed as Prometheus writes an instant vector, with no escape anywhere."""
    return body.startswith(HEAD) and body.endswith(TAIL) and b"\\" not in body


def pairs(body: bytes, one: str, other: str) -> Pairs | None:
    """(`one`, `other`, value) of each result of an answer to a `… by (one, other)` query, from its
    bytes; None where the answer is not exactly in that form (a result with other labels, an escape,
    warnings, an error: `data.loads` reads it). `Untrusted` for a label that is not UTF-8 or a value
    that is no number."""
    if not _plain(body):
        return None
    first, second = sorted((one, other))
    found = _result(first, second).findall(body)
    if len(found) != body.count(b'{"metric":'):
        return None
    try:
        if first == one:
            values = [(a.decode(), b.decode(), float(value)) for a, b, value in found]
        else:
            values = [(b.decode(), a.decode(), float(value)) for a, b, value in found]
    except UnicodeDecodeError:
        raise Untrusted("the answer has a label that is not UTF-8 text") from None
    except ValueError:
        raise Untrusted("the answer has a value that is not a number") from None
    if math.isfinite(sum(v for _, _, v in values)) or not values:
        return Pairs(values, 0)  # every value finite (a NaN or an infinity would make the sum one)
    kept = [triple for triple in values if math.isfinite(triple[2])]
    return Pairs(kept, len(values) - len(kept))


@functools.cache
def _keyed(first: str, second: str, key_first: bool) -> re.Pattern[bytes]:
    """`_result`, capturing the label `first` (`key_first`) or `second`, and the value."""
    other = rb'"[^"\\]*"'
    labels = (_LABEL, other) if key_first else (other, _LABEL)
    pattern = (
        rb'\{"metric":\{"'
        + first.encode()
        + rb'":'
        + labels[0]
        + rb',"'
        + second.encode()
        + rb'":'
        + labels[1]
    )
    return re.compile(pattern + rb'\},"value":\[[^,\]"]*,' + _VALUE + rb"\]\}")


def keyed(body: bytes, key: str, other: str) -> dict[bytes, bytes] | None:
    """Each result's `key` label → its value, as Prometheus wrote them (the label's UTF-8 bytes, the
    number's text: `number` reads it), of an answer to a `… by (key, other)` query; a label value
    seen twice keeps its last value. None where `pairs` gives None; `Untrusted` for an answer that
    is not UTF-8."""
    if not _plain(body):
        return None
    first, second = sorted((key, other))
    found = _keyed(first, second, first == key).findall(body)
    if len(found) != body.count(b'{"metric":'):
        return None
    if not body.isascii():
        try:
            body.decode()
        except UnicodeDecodeError:
            raise Untrusted("the answer is not UTF-8 text") from None
    return dict(found)


_NUMBER_BYTES = re.compile(_NUMBER.pattern.encode())


def number(text: bytes) -> float | None:
    """A value's text from `keyed` as a finite float; None for NaN, an infinity or no number."""
    if _NUMBER_BYTES.fullmatch(text) is None:
        return None
    found = float(text)
    return found if math.isfinite(found) else None


_NUMBERS = re.compile(f"(?:{_NUMBER.pattern})(?:,(?:{_NUMBER.pattern}))*")
"""Values' texts joined by commas (none in any of them): each one a number, one pattern for a whole
answer."""
_RESULT = "a result is not {metric, value: [time, number]}"


def results(result: object) -> list[tuple[dict[str, str], float]]:
    """Each result's labels and value, of an instant vector's `result` as `data.loads` gave it: the
    labels an object of strings, the value a number's text (`Untrusted` otherwise), only the finite
    values kept. Checked for the whole answer at once, not result by result (a few hundred labelled
    results at each refresh of the Fleet screen)."""
    if not isinstance(result, list):
        raise Untrusted(_RESULT)
    try:
        metrics = list(map(itemgetter("metric"), result))
        texts = list(map(itemgetter(1), map(itemgetter("value"), result)))
    except (KeyError, IndexError, TypeError):
        raise Untrusted(_RESULT) from None
    if not set(map(type, metrics)) <= {dict}:
        raise Untrusted(_RESULT)
    if not set(map(type, chain.from_iterable(map(dict.values, metrics)))) <= {str}:
        raise Untrusted("a result's labels are not strings")
    joined = ",".join(texts) if set(map(type, texts)) <= {str} else None
    if texts and (
        joined is None or joined.count(",") != len(texts) - 1 or _NUMBERS.fullmatch(joined) is None
    ):
        raise Untrusted("a result's value is not a number")
    numbers = list(map(float, texts))
    if math.isfinite(sum(numbers)):
        return list(zip(metrics, numbers, strict=True))
    return [
        (labels, number) for labels, number in zip(metrics, numbers, strict=True) if math.isfinite(number)
    ]
