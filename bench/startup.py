"""Start-up: time from process start to the first screen mounted, gaudi-tui vs. a minimal Textual app.

Both run in fresh interpreters, headless, measured the same way: the child prints the wall-clock
time when its first screen has mounted and refreshed; the figure is that time minus the parent's
time just before spawning the child. Median of N runs each. Target: ratio ≤ 1.5.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = 7

CHILD = r"""
import time
from textual.app import App
{setup}

class Probe({base}):
    def on_mount(self):
        super_mount = getattr(super(), "on_mount", None)
        if super_mount:
            super_mount()
        self.call_after_refresh(self._first_frame)

    def _first_frame(self):
        print(f"MOUNTED {{time.time():.6f}}", flush=True)
        self.exit()

Probe({args}).run(headless=True)
"""

MINIMAL = CHILD.format(
    setup="from textual.widgets import Footer, Static\n"
    "class Minimal(App):\n"
    "    def compose(self):\n"
    "        yield Static('hello')\n"
    "        yield Footer()\n",
    base="Minimal",
    args="",
)
GAUDI = CHILD.format(setup="from gaudi_tui.ui.app import GaudiApp", base="GaudiApp", args="")


def measure(code: str) -> float:
    start = time.time()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    for line in done.stdout.splitlines():
        if line.startswith("MOUNTED "):
            return float(line.split()[1]) - start
    raise RuntimeError(f"child did not report a mounted screen: {done.stderr[-500:]}")


def main() -> int:
    os.environ["GAUDI_TUI_HOME"] = tempfile.mkdtemp(prefix="gaudi-tui-bench-")
    measure(MINIMAL)  # warm the file cache
    measure(GAUDI)
    minimal = statistics.median(measure(MINIMAL) for _ in range(RUNS))
    gaudi = statistics.median(measure(GAUDI) for _ in range(RUNS))
    ratio = gaudi / minimal
    print(
        f"startup to first screen: gaudi-tui {gaudi * 1000:.0f} ms, minimal Textual app {minimal * 1000:.0f} ms"
    )
    print(f"ratio {ratio:.2f} (target ≤ 1.5), median of {RUNS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
