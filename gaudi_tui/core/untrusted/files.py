"""The file helpers every reader of a run folder or a shared file shares: a whole file replaced at
once (`write_atomic`), and the complete new lines of a file another process only appends to
(`AppendReader`), with a line that never ends kept to `OPEN_LINE_LIMIT`."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from gaudi_tui.core.untrusted.data import Untrusted, loads

OPEN_LINE_LIMIT = 64 * 1024
"""The most of a line without its end kept between reads (a binary dump, a bar drawn with \\b)."""


SMALL_FILE = 1 << 20
"""The most a file of one record (status.json, serve.json, slurm.json, a saved series) may hold."""
GROWN_CHUNK = 1 << 20
"""What `read_bounded` reads at a time of a file that grew after its size was taken."""


def read_bounded(path: Path, *, limit: int = SMALL_FILE, what: str | None = None) -> bytes:
    """The bytes of `path`, or `Untrusted` when it holds more than `limit` (a file that grew without
    end is never read whole); OSError as opening or reading raises it."""
    with path.open("rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:  # refused unread
            raise Untrusted(f"{what or path.name} is larger than {limit} bytes")
        # read(n) sets aside n bytes before it reads: ask for what the file holds (and one more, to
        # see it grew since), not for `limit` (64 MiB held for a 1 KiB index)
        data = fh.read(size + 1)
        while (
            len(data) > size
            and len(data) <= limit
            and (more := fh.read(min(GROWN_CHUNK, limit + 1 - len(data))))
        ):
            data += more
    if len(data) > limit:
        raise Untrusted(f"{what or path.name} is larger than {limit} bytes")
    return data


def load_json(
    path: Path, *, limit: int = SMALL_FILE, what: str | None = None, nonfinite: bool = False
) -> object:
    """`path`'s JSON, read as `untrusted.data.loads` reads (finite, 64-bit, bounded nesting, text)
    and no larger than `limit`: `Untrusted` (a ValueError) for what is not, OSError as reading raises."""
    name = what or path.name
    return loads(read_bounded(path, limit=limit, what=name), what=name, nonfinite=nonfinite)


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` at once: a reader sees the old file or the new one, never half."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class AppendReader:
    """Complete new lines of a file that only grows (restarts from 0 if it shrinks). A line longer
    than `OPEN_LINE_LIMIT` before its end comes is kept to that (`_bounded`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""
        self.behind = 0
        """Bytes written that the last read left for the next one (`at_most`)."""

    def read_lines(self, max_bytes: int | None = None, at_most: int | None = None) -> tuple[list[str], int]:
        """New complete lines, and how many bytes were skipped to honour `max_bytes` (the newest
        `max_bytes` are kept). `at_most`: read no more than this many bytes now, the rest at the next
        read (nothing skipped; `behind` says how many are left)."""
        try:
            size = self.path.stat().st_size
        except OSError:  # gone (deleted mid catch-up): nothing is left to read, so nothing is behind
            self.behind = 0
            return [], 0
        if size < self.offset:
            self.offset, self.partial = 0, b""
        if size == self.offset:
            return [], 0
        skipped = 0
        if max_bytes is not None and size - self.offset > max_bytes:
            skipped = size - max_bytes - self.offset
            self.offset, self.partial = size - max_bytes, b""
        want = size - self.offset if at_most is None else min(size - self.offset, at_most)
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read(want)
        except OSError:
            self.behind = 0
            return [], 0
        self.offset += len(chunk)
        self.behind = size - self.offset
        if skipped:
            chunk = chunk.split(b"\n", 1)[1] if b"\n" in chunk else b""  # drop the cut first line
        *complete, rest = chunk.split(b"\n")  # only the new bytes are searched
        if complete:
            complete[0], self.partial = self.partial + complete[0], rest
        else:
            self.partial += rest
        self.partial = _bounded(self.partial)
        # A progress bar redraws itself with \r: keep what a terminal would show, the last redraw.
        return [
            line.decode("utf-8", "replace").rstrip("\r").rsplit("\r", 1)[-1] for line in complete
        ], skipped


def _bounded(partial: bytes) -> bytes:
    """A line without its end yet, kept to `OPEN_LINE_LIMIT`: what follows its last \\r (the bar a
    terminal shows now), else its beginning."""
    if len(partial) <= OPEN_LINE_LIMIT:
        return partial
    redrawn = partial.rfind(b"\r")
    if redrawn >= 0 and len(partial) - redrawn - 1 <= OPEN_LINE_LIMIT:
        return partial[redrawn + 1 :]
    return partial[:OPEN_LINE_LIMIT]
