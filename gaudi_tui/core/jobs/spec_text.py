"""A quick reader of the TOML that `spec.to_toml` writes (issue 28: the first `gaudi-tui jobs` reads
a thousand spec.toml, and tomllib spent half of that call).

It knows only that form: `key = value` lines (booleans, decimal numbers, strings without a `\\u`
escape, one-line arrays of those), comments, blank lines and the `[env]` table of string pairs.
Whatever else a file holds — any other TOML, a repeated key, a broken line — makes it answer None,
and the caller parses the text with tomllib, which gives the same values or its own error. What it
returns is what tomllib returns for the same text; the spec's coercion and checks run on it alike.
"""

from __future__ import annotations

import json
import re

_STRING = r'"(?:[^"\\\x00-\x1f\x7f]|\\[btnfr"\\])*"'
_NUMBER = r"[+-]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|nan)"
_SCALAR = rf"{_STRING}|{_NUMBER}|true|false"
_TOKEN = re.compile(_SCALAR)
_LINE = re.compile(
    rf"[ \t]*(?P<key>[A-Za-z0-9_-]+|{_STRING})[ \t]*=[ \t]*"
    rf"(?P<value>{_SCALAR}|\[[ \t]*(?:(?:{_SCALAR})(?:[ \t]*,[ \t]*(?:{_SCALAR}))*)?[ \t]*\])[ \t]*"
)
_INTEGER = re.compile(r"[+-]?(?:0|[1-9][0-9]*)")
_SEEN: dict[str, tuple[str, object, bool] | None] = {}
"""Each line read, as (key, value, whether the value is a string), or None when it is not in the
form: a year of specs repeats most of their lines (the model, the learning rate, the defaults)."""
SEEN_MAX = 4096


def loads(text: str) -> dict[str, object] | None:
    """The table of a spec.toml in `to_toml`'s form, else None (parse it with tomllib)."""
    data: dict[str, object] = {}
    table = data
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped == "[env]":
            if "env" in data:
                return None
            table = data["env"] = {}
            continue
        read = _SEEN[line] if line in _SEEN else _line(line)
        if read is None:
            return None
        key, value, is_string = read
        if key in table or (table is not data and not is_string):
            return None  # a repeated key (tomllib's error), or an env value that is not a string
        table[key] = list(value) if isinstance(value, list) else value  # each caller its own list
    return data


def _line(line: str) -> tuple[str, object, bool] | None:
    match = _LINE.fullmatch(line)
    read = None
    if match is not None:
        key = match["key"]
        key = _string(key) if key.startswith('"') else key
        read = (key, _value(match["value"]), match["value"].startswith('"'))
    if len(_SEEN) >= SEEN_MAX:
        _SEEN.clear()
    _SEEN[line] = read
    return read


def _value(token: str) -> object:
    if token.startswith("["):
        return [_value(t) for t in _TOKEN.findall(token)]
    if token.startswith('"'):
        return _string(token)
    if token in ("true", "false"):
        return token == "true"
    return int(token) if _INTEGER.fullmatch(token) else float(token)


def _string(token: str) -> str:
    text: str = json.loads(token) if "\\" in token else token[1:-1]  # those escapes mean the same in JSON
    return text
