"""The steps the README's screenshots share (scripts/screenshots.py and its shot modules): waiting
for a state, choosing a run on Training, copying a recorded run, ending what a shot started."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


async def until(pilot, ready: Callable[[], bool], what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await pilot.pause(0.1)


async def select_run(pilot, run_id: str, what: str, pane: str, settle: float = 1.5) -> None:
    """Training with the recorded run `run_id` selected once it shows up, on `pane`'s key."""
    screen = pilot.app.screen
    await until(pilot, lambda: run_id in screen.views, what, timeout=10)
    screen.selected = run_id
    await pilot.press(pane)
    await pilot.pause(settle)


STARTED: list[Callable[[], object]] = []
"""How to end what a shot started (after its picture)."""


def replay_run(recorded: str = "runs", tests: str = "jobs", source: Path | None = None) -> str:
    """Copy a recorded real run (tests/TESTS/data/RECORDED; the newest, or `source`) into the runs folder."""
    from gaudi_tui.core.jobs import runfolder

    source = source or sorted((ROOT / "tests" / tests / "data" / recorded).iterdir())[-1]
    target = runfolder.runs_dir() / source.name
    if not target.exists():
        shutil.copytree(source, target)
        for item in target.iterdir():
            item.write_bytes(item.read_bytes().replace(b"{RUN}", str(target).encode()))
    return source.name
