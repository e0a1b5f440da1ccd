"""Write the README's screenshots (SVG) into screenshots/: each screen at 100×30.

Run with `make screenshots`. The host name and accelerator are fixed so the images only change
when the screens do.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.pilot import Pilot

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "screenshots"
SIZE = (100, 30)


async def chat_conversation(pilot: Pilot) -> None:
    """Two conversations with the real demo model (its engine loads on the first question)."""
    screen = pilot.app.screen
    for question in ("Which card is HL-225?", "What is hl-smi?"):
        await pilot.press("n", *question, "enter")
        await pilot.pause(0.2)
        deadline = time.monotonic() + 180
        while screen.engine_state != "ready" or screen.live is not None:  # type: ignore[attr-defined]
            if time.monotonic() > deadline:
                raise RuntimeError("the demo model did not answer in time")
            await pilot.pause(0.1)
        await pilot.press("escape")


# (file name, keys pressed after start-up, what to do then)
SHOTS: list[tuple[str, list[str], Callable[[Pilot], Awaitable[None]] | None]] = [
    ("devices.svg", ["1"], None),
    ("checklist.svg", ["2"], None),
    ("chat.svg", ["3"], chat_conversation),
    ("training.svg", ["4"], None),
    ("help.svg", ["question_mark"], None),
]


async def shoot(name: str, keys: list[str], then: Callable[[Pilot], Awaitable[None]] | None) -> None:
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.ui.app import GaudiApp

    cpu = Accelerator("cpu", "no CUDA device; no Gaudi software (habana_frameworks is not installed)")
    app = GaudiApp(accelerator=cpu, hostname="gaudi-host")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*keys)
        if then is not None:
            await then(pilot)
        await pilot.pause(0.5)
        app.save_screenshot(filename=name, path=str(OUT))
    print(f"wrote screenshots/{name}")


def main() -> int:
    os.environ.setdefault("GAUDI_TUI_HOME", tempfile.mkdtemp(prefix="gaudi-tui-shots-"))
    OUT.mkdir(exist_ok=True)
    for name, keys, then in SHOTS:
        asyncio.run(shoot(name, keys, then))
    return 0


if __name__ == "__main__":
    sys.exit(main())
