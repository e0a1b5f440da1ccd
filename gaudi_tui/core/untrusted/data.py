"""One reader for untrusted JSON and numbers: a server's answer, a file in a shared runs folder, a
user's metrics file, another user's job.

`loads` accepts only what every caller can hold: finite numbers, integers within 64 bits, nesting
no deeper than `MAX_DEPTH`, strings that are text (no lone surrogates), and nothing but UTF-8. What
it refuses is an `Untrusted` (a ValueError) whose message says what was wrong, never the input.
orjson does the parsing (a fifth of json's time, its own depth limit, no NaN, no infinite number, no
lone surrogates, only UTF-8): what it gives can break only two of these bounds, an integer past 64
bits (it reads up to 2^64 - 1) and nesting past `MAX_DEPTH`, so where the input holds no run of 19
digits no value is walked, and the depth is read from the brackets (a Prometheus answer of 2,048
series in a fraction of the time a walk of every value takes). json reads only the
`NaN`/`Infinity` words Python's own `json.dumps` writes, where a caller asked for them as None (a
loss that diverged is still a line of its log).

`number`, `integer` and `text` take one value out of what `loads` gave: the value in range, or None.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Iterable
from typing import Any, Literal, TypeVar, Union

import orjson

MAX_DEPTH = 64
"""The deepest nesting any reader accepts: no file or answer the panel reads nests past a dozen."""
INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1
T = TypeVar("T")
_NONFINITE = (b"NaN", b"Infinity")
_DIGITS_AS_0 = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19
"""The shortest run of digits an integer past 64 bits needs (one in a string also counts: then every
value is checked), looked for in the input with every digit made 0 (a regex takes ten times longer)."""
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')


class Untrusted(ValueError):
    """Input from outside that is not what was expected: the message says what, not the input."""


def loads(
    data: bytes | str, *, what: str = "input", nonfinite: bool = False, max_depth: int = MAX_DEPTH
) -> object:
    """`data` as JSON, checked: finite numbers, 64-bit integers, nesting within `max_depth`, text.

    `nonfinite`: read `NaN`, `Infinity` and `-Infinity` (which Python's json.dumps writes) as None
    rather than refuse the whole document."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if not (nonfinite and any(word in raw for word in _NONFINITE)):
            raise Untrusted(f"{what} is not valid JSON ({_why(exc)})") from None
        value = _loads_nonfinite(raw, what)
    else:
        if _LONG_DIGITS not in raw.translate(_DIGITS_AS_0) and _depth_checked(raw, what, max_depth):
            return value  # orjson's numbers and strings are within bounds, and so is the nesting
    _check(value, what, max_depth)
    return value


def loads_at(
    text: str, pos: int = 0, *, what: str = "input", nonfinite: bool = False, max_depth: int = MAX_DEPTH
) -> tuple[object, int]:
    """The one JSON value that starts at `text[pos]` (more may follow it), checked as `loads` checks,
    and where it ends: for a stream of values with no framing of its own (Intel's metrics file).
    What is cut off before its end is an `Untrusted` too."""
    try:
        value, end = (_LENIENT if nonfinite else _STRICT).raw_decode(text, pos)
    except RecursionError:
        raise Untrusted(f"{what} nests too deeply") from None
    except ValueError as exc:
        raise Untrusted(f"{what} is not valid JSON ({_why(exc)})") from None
    _check(value, what, max_depth)
    return value, end


def _refuse(word: str) -> object:
    raise ValueError(f"{word} is not a finite number")


def _why(exc: ValueError) -> str:
    return str(exc).split(":", 1)[0][:80]


def _loads_nonfinite(raw: bytes, what: str) -> object:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Untrusted(f"{what} is not UTF-8 text") from None
    try:
        return _LENIENT.decode(text)
    except RecursionError:
        raise Untrusted(f"{what} nests too deeply") from None
    except ValueError as exc:
        raise Untrusted(f"{what} is not valid JSON ({_why(exc)})") from None


def _int_of(digits: str) -> int:
    if len(digits.lstrip("-")) > 19:
        raise ValueError("an integer past 64 bits")
    return int(digits)


_STRICT = json.JSONDecoder(parse_constant=_refuse, parse_int=_int_of)
_LENIENT = json.JSONDecoder(parse_constant=lambda _: None, parse_int=_int_of)


def checked(value: T, *, what: str = "input", infinite: bool = False, max_depth: int = MAX_DEPTH) -> T:
    """`value` (parsed by another reader: TOML, a form) when it holds only what `loads` accepts,
    else `Untrusted`. `infinite`: a float may be infinite or NaN (TOML's `inf` means something)."""
    _check(value, what, max_depth, infinite)
    return value


def _check(value: object, what: str, max_depth: int, infinite: bool = False) -> None:
    """Walk `value` (iteratively: no recursion an input can exhaust) and refuse what a caller cannot
    hold. A flat object of scalars, the common case, costs one pass over its values."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[object]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            _check_scalar(item, what, infinite)
            continue
        if depth >= max_depth:
            raise Untrusted(f"{what} nests deeper than {max_depth}")
        for child in children:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
            else:
                _check_scalar(child, what, infinite)


def _depth_checked(raw: bytes, what: str, max_depth: int) -> bool:
    """`_check` of what orjson read from `raw` (valid JSON, no long run of digits: only its nesting
    can be out of bounds), at C speed: its brackets, each pass taking away the innermost pairs; what
    is left after `max_depth` passes nests deeper. False where this cannot tell (an escape, or a
    bracket in a string): then the caller walks the value."""
    if b"\\" in raw:
        return False
    brackets = raw.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in brackets:
        return False  # a string holds a bracket (each string's quotes are left as a pair otherwise)
    for _ in range(max_depth):
        if not brackets:
            return True
        brackets = brackets.replace(b"[]", b"x").replace(b"{}", b"x").replace(b"x", b"")
    if brackets:
        raise Untrusted(f"{what} nests deeper than {max_depth}")
    return True


def _check_scalar(item: object, what: str, infinite: bool) -> None:
    if isinstance(item, float):
        if not (infinite or math.isfinite(item)):
            raise Untrusted(f"{what} has a number out of range")
    elif isinstance(item, int) and not isinstance(item, bool):
        if not INT_MIN <= item <= INT_MAX:
            raise Untrusted(f"{what} has an integer past 64 bits")
    elif isinstance(item, str):
        _check_text(item, what)


def _check_text(item: str, what: str) -> None:
    try:
        item.encode("utf-8")
    except UnicodeEncodeError:
        raise Untrusted(f"{what} has a string that is not text (a lone surrogate)") from None


def number(value: object, *, lo: float = -math.inf, hi: float = math.inf) -> float | None:
    """A finite int or float within [lo, hi] as a float, else None (a bool is not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
        return None
    result = float(value)
    return result if math.isfinite(result) and lo <= result <= hi else None


def integer(value: object, *, lo: int = INT_MIN, hi: int = INT_MAX) -> int | None:
    """A whole number within [lo, hi] (an int, or a float with no fraction), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        value = int(value)
    return value if isinstance(value, int) and lo <= value <= hi else None


def text(value: object, *, max_chars: int = 4096) -> str | None:
    """A string that is text, cut to `max_chars`, else None."""
    if not isinstance(value, str):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value[:max_chars]


def record(cls: type[T], value: object, *, what: str) -> T:
    """The dataclass `cls` from a JSON object, its unknown keys left out; `Untrusted` when it is not
    an object, lacks a field without a default, or has a field not of its annotated kind (int,
    float, str, bool, None, Any, Literal, unions, list, tuple and dict of those)."""
    if not isinstance(value, dict):
        raise Untrusted(f"{what} is not a JSON object")
    hints = typing.get_type_hints(cls)
    known = {}
    for spec in dataclasses.fields(cls):  # type: ignore[arg-type]
        if spec.name in value:
            if not _fits(value[spec.name], hints[spec.name]):
                raise Untrusted(f"{what}: {spec.name} is not of its kind")
            known[spec.name] = value[spec.name]
    try:
        return cls(**known)
    except TypeError:
        raise Untrusted(f"{what} lacks a field it needs") from None


def _fits(value: object, kind: Any) -> bool:  # noqa: PLR0911 - one answer per kind
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return True
    if origin in (Union, types.UnionType):
        return any(_fits(value, arg) for arg in args)
    if origin is Literal:
        return value in args
    if kind in (type(None), bool, str):
        return type(value) is kind
    if kind is int:
        return type(value) is int
    if kind is float:
        return number(value) is not None
    if origin is list:
        return isinstance(value, list) and all(_fits(v, args[0]) for v in value)
    if origin is tuple and args[-1] is Ellipsis:
        return isinstance(value, list | tuple) and all(_fits(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(
            _fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items()
        )
    return False
