"""What the hostile-file catalogue's readers share (tests/untrusted/file_readers.py): `Seen`, what a
reader gave, and `Reader`, one reader with a good item to put the hostile cases in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Seen:
    """What a reader gave: the values of the items it read, and what it said of what it passed over
    (truthy: counted, refused or "unreadable"; None: this reader says it elsewhere or not at all,
    as test_hostile_files.py's docstring lists)."""

    values: list[object]
    said: object = None


Poller = Callable[[], Seen]


@dataclass(frozen=True)
class Reader:
    """One reader. `item`: one item with `@` where a value goes; `good`: that value in a good item;
    `before`/`after`: good items around the hostile one in the same file; `keeps`: the values of
    those that must still be read (`keeps_whole`: when a whole case replaces the last item);
    `open(path)`: a poll of the file as its caller polls it (a fresh reader each time for a caller
    that reads once); `errors`: what the caller catches."""

    file: str
    item: bytes
    open: Callable[[Path], Poller]
    good: bytes = b"7"
    before: bytes = b""
    after: bytes = b""
    keeps: frozenset[object] = frozenset()
    keeps_whole: frozenset[object] = frozenset()
    errors: tuple[type[BaseException], ...] = ()
    new: object = 9
    """What the reader gives of a new good item of value 9, after the file shrank or vanished."""
    then: bytes = b"\n"
    """What a writer puts before its next item after a cut (the end of the line it was cut in)."""
    prepare: Callable[[Path, Reader], Reader] | None = field(default=None, compare=False)
    """Makes the reader's item for its folder (a cache keyed by the file it is of)."""

    def fill(self, value: bytes) -> bytes:
        return self.item.replace(b"@", value)


def once(read: Callable[[Path], Seen]) -> Callable[[Path], Poller]:
    return lambda path: lambda: read(path)


# ---- metrics.jsonl and the other files a job appends to --------------------------------------------


def lines_of(template: bytes, *steps: int) -> bytes:
    return b"".join(template.replace(b"@", b"%d" % s) + b"\n" for s in steps)


LOADING_POLLS = 1000
"""More polls than a 100 MiB file takes in slices: a reader still behind after them spins."""
LOG = b'{"event":"log","step":@,"time":1.5,"loss":0.5}'
END = b'{"event":"end","step":@,"state":"succeeded"}'
