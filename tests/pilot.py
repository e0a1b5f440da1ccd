"""Waiting in a Textual pilot test for the state it means: a predicate polled with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.pilot import Pilot


async def settle(
    pilot: Pilot, predicate: Callable[[], object], timeout: float = 10.0, what: str = "the screen"
) -> None:
    """Until `predicate()` is true, pausing the app 0.1 s at a time; an AssertionError after `timeout`."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not reach the expected state in {timeout:g} s")
        await pilot.pause(0.1)
