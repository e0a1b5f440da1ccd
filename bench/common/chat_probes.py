"""What the chat bench reads beside the pane's own figures: the main thread's CPU while an answer
decodes, the panel in a tmux server of its own, and a process's CPU from /proc."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

MAIN_CPU = time.pthread_getcpuclockid(threading.main_thread().ident)


class DecodeWindow:
    """The main thread's CPU between an answer's first and last text, stamped as each text reaches
    `EngineClient.generate` (in its worker thread): what drawing took from the engine while it
    decoded; and the frames and layouts Textual made in that window (screen refreshes and reflows
    on the main thread)."""

    def __init__(self) -> None:
        self.stamps: list[float] = []
        self.counts = {"frames": 0, "layouts": 0}
        self.first: dict[str, int] = {}
        self.last: dict[str, int] = {}

    def install(self) -> None:
        from textual.screen import Screen

        from gaudi_tui.core.chat.client import EngineClient

        original = EngineClient.generate

        def generate(client, messages, params, on_text=None, **kwargs):  # noqa: ANN001, ANN202
            self.stamps.clear()

            def stamped(text: str) -> None:
                self.stamps.append(time.clock_gettime(MAIN_CPU))
                self.last = dict(self.counts)
                if len(self.stamps) == 1:
                    self.first = self.last
                if on_text is not None:
                    on_text(text)

            return original(client, messages, params, on_text=stamped, **kwargs)

        EngineClient.generate = generate
        for name, key in (("_compositor_refresh", "frames"), ("_refresh_layout", "layouts")):
            setattr(Screen, name, self._counted(getattr(Screen, name), key))

    def _counted(self, method, key: str):  # noqa: ANN001, ANN202
        def counted(screen, *args, **kwargs):  # noqa: ANN001, ANN202
            self.counts[key] += 1
            return method(screen, *args, **kwargs)

        return counted

    def cpu_s(self) -> float:
        return self.stamps[-1] - self.stamps[0]

    def made(self, key: str) -> int:
        """Frames or layouts between the answer's first and last text."""
        return self.last[key] - self.first[key]


class Tmux:
    """The panel in a real terminal: a tmux server of its own (stopped at the end)."""

    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s
        self.socket = f"gaudi-tui-bench-chat-{os.getpid()}"

    def run(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        ).stdout

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.run("send-keys", "-t", "panel", *(["-l"] if literal else []), *keys)

    def wait(self, ready, what: str) -> None:  # noqa: ANN001 - () -> bool
        deadline = time.monotonic() + self.wait_s
        while not ready():
            if time.monotonic() > deadline:
                screen = self.run("capture-pane", "-p", "-t", "panel")
                raise RuntimeError(f"the panel in tmux did not show {what} in time:\n{screen}")
            time.sleep(0.05)


def process_cpu_s(pid: int) -> float:
    """user + system CPU of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def engine_pid(panel_pid: int) -> int | None:
    """The panel's chat engine child (`python -m gaudi_tui.core.chat.engine`), once it runs."""
    import psutil

    try:
        for child in psutil.Process(panel_pid).children():
            if "gaudi_tui.core.chat.engine" in child.cmdline():
                return child.pid
    except psutil.Error:
        pass
    return None


def settle(pid: int, still_s: float = 0.2, timeout_s: float = 5.0) -> None:
    """Until the process has used no CPU for `still_s` (its frames drawn), at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last = process_cpu_s(pid)
    while time.monotonic() < deadline:
        time.sleep(still_s)
        now = process_cpu_s(pid)
        if now == last:
            return
        last = now
