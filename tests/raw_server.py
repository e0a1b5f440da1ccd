"""A raw loopback HTTP peer for the tests that need a server to misbehave below http.server: on
127.0.0.1 at an ephemeral port, each connection is handed to `serve(conn, stop)` in a thread of its
own and closed after; an OSError there is the client giving up, as it may."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable


class RawServer:
    def __init__(self, serve: Callable[[socket.socket, threading.Event], None]) -> None:
        self.serve = serve
        self.stop = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=16)
        self.sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._one, args=(conn,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            try:
                self.serve(conn, self.stop)
            except OSError:
                pass  # the client gave up and closed: as it may

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        for thread in self.threads:
            thread.join(5)
