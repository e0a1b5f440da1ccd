"""The one owner of the GIL's switch interval: whoever needs threads to hand the GIL over promptly
holds it, and the interval is as it was once the last holder lets go.

The app's first second (`ui/app.py`: Textual's output thread writes the first frames while the
main thread builds the rest) and every streaming answer (`ui/screens/chat.py`, the side-by-side
screen: the engine client's reader thread stamps each token as it arrives) want the GIL to change
hands every PROMPT_S instead of CPython's 5 ms. They overlap: two answers stream at once side by
side, and an answer can start in the app's first second. A holder that saved and restored the
interval itself would restore 5 ms while another still streams; holders are counted instead.
"""

from __future__ import annotations

import sys
import threading
from types import TracebackType

PROMPT_S = 0.0005
"""The GIL changes hands every 0.5 ms while anyone holds it (CPython's default is 5 ms)."""


class PromptSwitching:
    """Counts its holders: the first sets the switch interval to at most `prompt_s`, the last one
    out puts back what the first found."""

    def __init__(self, prompt_s: float = PROMPT_S) -> None:
        self.prompt_s = prompt_s
        self._lock = threading.Lock()
        self._holders = 0
        self._usual = sys.getswitchinterval()

    def hold(self) -> Hold:
        """Prompt switching until the returned hold is released (or its `with` block ends)."""
        with self._lock:
            if self._holders == 0:
                self._usual = sys.getswitchinterval()
                sys.setswitchinterval(min(self._usual, self.prompt_s))
            self._holders += 1
        return Hold(self)

    def _let_go(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                sys.setswitchinterval(self._usual)


class Hold:
    """One holder of prompt switching; releasing it twice counts once."""

    def __init__(self, owner: PromptSwitching) -> None:
        self._owner = owner
        self._released = False
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        self._owner._let_go()

    def __enter__(self) -> Hold:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.release()


SWITCHING = PromptSwitching()
"""The process's one owner."""


def prompt_switching() -> Hold:
    """`with prompt_switching():` — the GIL every PROMPT_S while the block runs."""
    return SWITCHING.hold()
