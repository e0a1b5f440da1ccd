"""The checks of a supervisor's watch loop (local, Slurm, Ray): what one raises is written to
supervisor.log (the supervisor's stderr) once while it keeps raising, and the loop goes on. A
supervisor that died of one check's bug would leave its job running unwatched, shown as lost."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable


class WatchChecks:
    def __init__(self, goes_on: str, passes: tuple[type[Exception], ...] = ()) -> None:
        """`goes_on`: what the log says happens next (e.g. "the job is followed on"); `passes`: the
        loop's own exceptions (its way out), raised as they are."""
        self.goes_on, self.passes = goes_on, passes
        self.failing: set[str] = set()
        """The checks whose last try raised (each said once)."""

    def run(self, name: str, check: Callable[[], object]) -> bool:
        """`check()`'s answer as a bool; False when it raised."""
        try:
            said = bool(check())
        except self.passes:
            raise
        except Exception:  # noqa: BLE001 - a check's bug must not end the watch
            if name not in self.failing:
                self.failing.add(name)
                print(f"{name} failed (tried again at each poll; {self.goes_on}):\n"
                      f"{traceback.format_exc()}", file=sys.stderr, flush=True)  # fmt: skip
            return False
        self.failing.discard(name)
        return said
