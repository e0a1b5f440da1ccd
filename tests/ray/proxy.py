"""A loopback TCP proxy in front of the test cluster's dashboard: what an SSH tunnel is to a panel,
with the faults a tunnel has. `open` relays; `cut` refuses (every connection is closed at once, the
relays too: a tunnel whose ssh died); `hang` accepts and never answers, and the relays stop moving
bytes (a tunnel whose far end is gone while its listener stays up)."""

from __future__ import annotations

import socket
import threading
from typing import Literal

Mode = Literal["open", "cut", "hang"]


class Proxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = int(self.listener.getsockname()[1])
        self.mode: Mode = "open"
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set(self, mode: Mode) -> None:
        with self.lock:
            self.mode = mode
            if mode == "cut":
                for sock in self.sockets:
                    _close(sock)
                self.sockets.clear()

    def close(self) -> None:
        self.closed = True
        self.set("cut")
        _close(self.listener)

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                mode = self.mode
                self.sockets.append(conn)
            if mode == "cut":
                self.set("cut")
                continue
            if mode == "hang":
                continue  # held open, never read, never answered
            try:
                up = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _close(conn)
                continue
            with self.lock:
                self.sockets.append(up)
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=self._relay, args=(a, b), daemon=True).start()

    def _relay(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            src.settimeout(None)
            while True:
                data = src.recv(65536)
                if not data:
                    break
                while self.mode == "hang" and not self.closed:
                    threading.Event().wait(0.1)  # frozen: the bytes go nowhere
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _close(src)
            _close(dst)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
