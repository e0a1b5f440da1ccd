"""Write the README's screenshots (SVG) into screenshots/: each screen at 100×30.

Run with `make screenshots`. The host name and accelerator are fixed so the images only change
when the screens do.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "screenshots"
SIZE = (100, 30)


async def run_checklist(pilot) -> None:
    """The checklist of a replayed Gaudi 2 host (tests/doctor/hosts.py), one finding opened."""
    sys.path.insert(0, str(ROOT))
    from gaudi_tui.core.doctor.checks import ALL_CHECKS
    from gaudi_tui.ui.screens.checklist import CheckList
    from tests.doctor.hosts import demo_gaudi_host

    pilot.app.screen.context_factory = demo_gaudi_host(Path(tempfile.mkdtemp(prefix="gaudi-tui-shots-site-")))
    await pilot.press("r")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    pilot.app.screen.query_one(CheckList).index = [c.id for c in ALL_CHECKS].index("cards.busy")
    await pilot.press("enter")


# what a screen needs after its keys to show real content
SETUPS = {"checklist.svg": run_checklist}

# (file name, keys pressed after start-up)
SHOTS = [
    ("devices.svg", ["1"]),
    ("checklist.svg", ["2"]),
    ("chat.svg", ["3"]),
    ("training.svg", ["4"]),
    ("help.svg", ["question_mark"]),
]


def replay_training_run() -> None:
    """Training shows a recorded real run of the demo fine-tune (tests/jobs/data/runs)."""
    from gaudi_tui.core import paths

    source = sorted((ROOT / "tests" / "jobs" / "data" / "runs").iterdir())[-1]
    target = paths.runs_dir() / source.name
    if not target.exists():
        shutil.copytree(source, target)
        for item in target.iterdir():
            item.write_bytes(item.read_bytes().replace(b"{RUN}", str(target).encode()))


async def shoot(name: str, keys: list[str]) -> None:
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.ui.app import GaudiApp

    cpu = Accelerator("cpu", "no CUDA device; no Gaudi software (habana_frameworks is not installed)")
    app = GaudiApp(accelerator=cpu, hostname="gaudi-host")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*keys)
        if name in SETUPS:
            await SETUPS[name](pilot)
        await pilot.pause(0.5)
        app.save_screenshot(filename=name, path=str(OUT))
    print(f"wrote screenshots/{name}")


def main() -> int:
    os.environ.setdefault("GAUDI_TUI_HOME", tempfile.mkdtemp(prefix="gaudi-tui-shots-"))
    OUT.mkdir(exist_ok=True)
    replay_training_run()
    for name, keys in SHOTS:
        asyncio.run(shoot(name, keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
