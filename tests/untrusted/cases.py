"""The shared catalogue of hostile input (issue 38, part C), for every reader of files and answers.

`CASES` maps a case's name to what a hostile writer or server sends in place of one good item:
either bytes, a JSON fragment a reader's table entry puts where one value of a good item goes, or a
factory that returns an iterator of chunks (so a 100 MiB line is never held whole: write or send
it chunk by chunk). `WHOLE` names the cases that replace a whole item rather than one value of it,
and `STREAM_ONLY` those only a stream can be (a stream that never ends: a file always ends).
`assert_bounded` runs one reader call and checks the first two of the four things every case must
keep (memory grows by less than 64 MiB, an answer within a bound) and that an error, if any, is one
the caller is meant to catch; the caller checks the other two (the item skipped and said, the rest
still read).
"""

from __future__ import annotations

import itertools
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from gaudi_tui.core.untrusted.data import Untrusted

T = TypeVar("T")
Factory = Callable[[], Iterator[bytes]]

MIB = 1024 * 1024
MEMORY_LIMIT = 64 * MIB
SECONDS = 10.0
"""A generous bound for one call (a 100 MiB line read and dropped takes well under a second here);
a reader that loops or reads without an end runs far past it."""
CHUNK = 1 * MIB
HUGE_LINE = 100 * MIB


def _huge_line() -> Iterator[bytes]:
    """100 MiB of one JSON string with no end and no line end, 1 MiB at a time."""
    yield b'{"event": "log", "step": 1, "note": "'
    chunk = b"x" * CHUNK
    for _ in range(HUGE_LINE // CHUNK):
        yield chunk


def _endless() -> Iterator[bytes]:
    """A stream that never ends: complete items for ever (a server that ignores max_tokens)."""
    for step in itertools.count():
        yield b'{"event": "log", "step": %d}\n' % step


NESTING = 100_000
CASES: dict[str, bytes | Factory] = {
    "nan": b"NaN",
    "infinity": b"Infinity",
    "minus_infinity": b"-Infinity",
    "digits_400": b"9" * 400,
    "digits_4300": b"9" * 4300,
    "digits_5000": b"9" * 5000,
    "float_400_digits": b"9" * 400 + b".5",
    "nested_100000": b"[" * NESTING + b"]" * NESTING,
    "nested_open_100000": b"{" * NESTING,
    "invalid_utf8": b'"\xff\xfe\xc3("',
    "lone_surrogate_escape": b'"\\ud800"',
    "lone_surrogate_raw": b'"\xed\xa0\x80"',
    "string_for_number": b'"7"',
    "number_for_string": b"7",
    "list_for_scalar": b"[1, 2]",
    "object_for_scalar": b'{"a": 1}',
    "null": b"null",
    "bool": b"true",
    "negative": b"-1",
    "line_100mib_no_end": _huge_line,
    "truncated": b'{"event": "log", "st',
    "endless": _endless,
}
WHOLE = frozenset({"line_100mib_no_end", "truncated", "endless"})
STREAM_ONLY = frozenset({"endless"})
FILE_CASES = [name for name in CASES if name not in STREAM_ONLY]
"""Every case a file can be; the file's shrinking or vanishing while read is the file readers' own
case (tests/untrusted/test_hostile_files.py), since it is what happens to a file, not in it."""


def chunks(case: bytes | Factory) -> Iterator[bytes]:
    """A case as chunks, whichever form it has."""
    return iter((case,)) if isinstance(case, bytes) else case()


def write_case(path: Path, before: bytes, case: bytes | Factory, after: bytes = b"") -> Path:
    """`before`, the case, `after` written to `path` chunk by chunk (never the whole case at once)."""
    with path.open("wb") as fh:
        fh.write(before)
        for chunk in chunks(case):
            fh.write(chunk)
        fh.write(after)
    return path


def assert_bounded(
    call: Callable[[], T],
    *,
    errors: tuple[type[BaseException], ...] = (Untrusted,),
    seconds: float = SECONDS,
    memory: int = MEMORY_LIMIT,
) -> T | BaseException:
    """Run `call` once: its peak of new memory stays under `memory`, it answers within `seconds`,
    and whatever it raises is one of `errors` (anything else is raised again, failing the test).
    Returns what it gave back, or the error it raised, for the caller's own checks."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        result: T | BaseException = call()
    except errors as exc:
        result = exc
    finally:
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < memory, f"{peak / MIB:.0f} MiB held for one call (the bound is {memory / MIB:.0f} MiB)"
    assert elapsed < seconds, f"{elapsed:.1f} s for one call (the bound is {seconds:.0f} s)"
    return result
