"""Write the README's screenshots (SVG) into screenshots/: each screen at 100×30.

Run with `make screenshots`. The host name and accelerator are fixed so the images only change
when the screens do.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "screenshots"
SIZE = (100, 30)

SAMPLES = ROOT.parent / "shared" / "hl-smi-samples"
# Devices: 8 cards replayed from real hl-smi samples by the test-double hl-smi (tests/fakes/bin),
# one sample per refresh, refreshed every 0.05 s so the sparklines fill in seconds, then holding
# the busy one (three cards with HBM reserved, one process) for the picture.
FAKE_HL_SMI = {
    "PATH": os.pathsep.join(
        [str(ROOT / "tests" / "fakes" / "bin"), str(Path(sys.executable).parent), os.environ.get("PATH", "")]
    ),
    "FAKE_HLSMI_SAMPLES_DIR": str(SAMPLES),
    "FAKE_HLSMI_SAMPLE": ",".join(
        [
            "gaudi2-hl225-x8-1.20.0-busy-table.txt",
            "gaudi2-hl225-x8-1.16.0-process-table.txt",
            "gaudi2-hl225-x8-1.12.1-table.txt",
        ]
    ),
    "FAKE_HLSMI_PERIOD": "0.05",
    "FAKE_HLSMI_HOLD": "140",
}

# (file name, keys pressed after start-up)
SHOTS = [
    ("devices.svg", ["1", "space", "down", "down", "down", "space", "n"]),
    ("checklist.svg", ["2"]),
    ("chat.svg", ["3"]),
    ("training.svg", ["4"]),
    ("help.svg", ["question_mark"]),
]


async def shoot(name: str, keys: list[str]) -> None:
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.ui.app import GaudiApp

    cpu = Accelerator("cpu", "no CUDA device; no Gaudi software (habana_frameworks is not installed)")
    app = GaudiApp(accelerator=cpu, hostname="gaudi-host")
    saved_env = dict(os.environ)
    if name == "devices.svg":
        os.environ.update(FAKE_HL_SMI)
    try:
        async with app.run_test(size=SIZE) as pilot:
            if name == "devices.svg":
                await pilot.pause(9.0)  # let the replayed refreshes fill the sparklines
            await pilot.press(*keys)
            await pilot.pause(0.5)
            app.save_screenshot(filename=name, path=str(OUT))
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
    print(f"wrote screenshots/{name}")


def main() -> int:
    os.environ.setdefault("GAUDI_TUI_HOME", tempfile.mkdtemp(prefix="gaudi-tui-shots-"))
    OUT.mkdir(exist_ok=True)
    for name, keys in SHOTS:
        asyncio.run(shoot(name, keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
