"""A socket held to one deadline: every send and receive is given what is left of it (at most an idle
bound per wait), and the reads before an answer's headers end are capped, so a server that drips
its status line or headers, or sends them without end, meets the deadline or the cap. Used by the
bounded HTTP client (`http.py`) through `http.client`'s connections.
"""

from __future__ import annotations

import http.client
import io
import math
import socket
import time
from typing import Any

MAX_HEAD = 64 << 10
"""The status line and every header together."""


class Bounded:
    """A connected socket whose every send and receive is given what is left until `deadline` (at most
    `idle` for one wait), and whose reads before the headers end are capped at `MAX_HEAD`."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.deadline = math.inf
        self.idle = math.inf
        self.head_left: int | None = None
        """Bytes the status line and headers may still take; None once they are read."""

    def arm(self) -> None:
        self.sock.settimeout(min(left(self.deadline), self.idle))

    def sendall(self, data: bytes) -> None:
        self.arm()
        self.sock.sendall(data)

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_BoundedReader(self.sock.makefile("rb", buffering=0), self))

    def close(self) -> None:
        self.sock.close()  # really closed once the answer's reader is closed too, as a socket is

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


class HeadTooLong(http.client.HTTPException):
    pass


class _BoundedReader(io.RawIOBase):
    def __init__(self, raw: Any, bounded: Bounded) -> None:
        self.raw, self.bounded = raw, bounded

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self.bounded.arm()
        left = self.bounded.head_left
        if left is None:
            return int(self.raw.readinto(buffer))
        if left <= 0:
            raise HeadTooLong(f"a status line and headers longer than {MAX_HEAD:,} bytes")
        view = memoryview(buffer)[:left]
        got = int(self.raw.readinto(view))
        self.bounded.head_left = left - got
        return got

    def close(self) -> None:
        self.raw.close()
        super().close()


class Connection(http.client.HTTPConnection):
    """A plain connection whose socket is bounded (`exchange` sets its deadline)."""

    def connect(self) -> None:
        super().connect()
        self.sock = Bounded(self.sock)


class TLSConnection(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()  # TCP, a proxy's CONNECT and the TLS handshake, within `timeout`
        self.sock = Bounded(self.sock)


def left(deadline: float) -> float:
    """Seconds left until `deadline` (monotonic time); TimeoutError when none are."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("timed out")
    return left
