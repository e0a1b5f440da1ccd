"""Output split into lines as it arrives, with a bound on the line still open.

Only the new text is searched for line ends (a long line costs its own length once, never again per
chunk), and the open line is kept up to `limit` characters, so output with no line end (a binary
dump, a progress bar drawn with backspaces) cannot grow the memory without bound. Past the limit a
reader cuts the line (`on_cut` is told once per line, with its beginning); a mirror, which copies
the output into stdout.log, passes the open line on instead (`passes`), and also what a
progress bar has drawn up to its last `\\r` (a terminal shows it in place), so a bar redrawn for
hours without a line end reaches stdout.log as it is drawn.
"""

from __future__ import annotations

import re
from collections.abc import Callable

LIMIT = 64 * 1024
"""The most of one open line kept (characters): longer than any line a reader or a mirror parses."""
HEAD = 80
"""How much of a cut line's beginning `on_cut` gets (to say which line it was)."""


class Lines:
    def __init__(
        self,
        ends: str = "\n",
        limit: int = LIMIT,
        on_cut: Callable[[str], None] | None = None,
        passes: bool = False,
    ) -> None:
        self._end = re.compile(f"[{re.escape(ends)}]")
        self.limit = limit
        self.on_cut = on_cut
        self.passes = passes
        """A mirror's: the open line past `limit`, and a bar's redraws, are passed on (`pieces`)."""
        self._open: list[str] = []
        self.open_len = 0
        """Characters of the open line kept (never more than `limit`)."""
        self.cut = 0
        """Characters of the open line cut so far."""

    def feed(self, text: str) -> list[str]:
        """A reader's: the lines `text` completes (without their ends); the rest stays open."""
        parts = self._end.split(text)  # the new text only
        tail = parts.pop()
        if parts:
            self._hold(parts[0], [])
            parts[0] = self.take()
            if max(map(len, parts)) > self.limit:  # rare: cut, and say so
                for i, part in enumerate(parts[1:], start=1):
                    self._hold(part, [])
                    parts[i] = self.take()
        self._hold(tail, [])
        return parts

    def pieces(self, text: str) -> list[tuple[str, bool]]:
        """A mirror's (`passes`), in order: (a complete line without its end, True), or (text of
        the open line passed on as it is, False). A complete line is given whole, however long."""
        parts = self._end.split(text)  # the new text only
        tail = parts.pop()
        out: list[tuple[str, bool]] = []
        if parts:
            self._hold(parts[0], out)
            parts[0] = self.take()
            out += [(line, True) for line in parts]
        redrawn = tail.rfind("\r", 0, len(tail) - 1)
        if redrawn >= 0:  # a bar's redraws: on now, up to the last \r
            out.append((self.take() + tail[: redrawn + 1], False))
            tail = tail[redrawn + 1 :]
        self._hold(tail, out)
        return out

    def peek(self) -> str:
        """The open line as kept (at most `limit` characters)."""
        if len(self._open) > 1:
            self._open = ["".join(self._open)]
        return self._open[0] if self._open else ""

    def take(self) -> str:
        """The open line as kept, and a new one begins."""
        text = self.peek()
        self._open, self.open_len, self.cut = [], 0, 0
        return text

    def _hold(self, piece: str, out: list[tuple[str, bool]]) -> None:
        if not piece:
            return
        room = self.limit - self.open_len
        if len(piece) > room and self.passes:
            out.append((self.take() + piece, False))  # nothing is lost; the rest goes unparsed
            return
        if len(piece) > room:
            if self.cut == 0 and self.on_cut is not None:
                self.on_cut((self.peek() + piece[:room])[:HEAD])
            self.cut += len(piece) - room
            piece = piece[:room]
            if not piece:
                return
        self._open.append(piece)
        self.open_len += len(piece)


def deliver(
    pieces: list[tuple[str, bool]], write: Callable[[list[str]], None], through: Callable[[str], None]
) -> None:
    """A mirror's pieces in order: runs of complete lines to `write`, passed-on text to `through`."""
    lines: list[str] = []
    for text, whole in pieces:
        if whole:
            lines.append(text)
            continue
        if lines:
            write(lines)
            lines = []
        through(text)
    if lines:
        write(lines)
