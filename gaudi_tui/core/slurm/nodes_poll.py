"""The nodes, from `sinfo --json` at most every NODES_EVERY_S: a node's state changes far less often
than the queue, and at 512 hosts its answer is megabytes of JSON to decode. The Slurm screen asks
every refresh and gets the last answer until it is that old; `r` (refresh now) asks afresh. A
failed call is not kept: the next refresh tries again, and the screen says why meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from gaudi_tui.core.slurm import model
from gaudi_tui.core.slurm.cli import Slurm, SlurmError

NODES_EVERY_S = 10.0

Nodes = tuple[model.SlurmNode, ...]


class NodesPoll:
    def __init__(
        self, slurm: Slurm, every: float = NODES_EVERY_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.slurm = slurm
        self.every = every
        self.clock = clock
        self._lock = threading.Lock()
        self._nodes: Nodes = ()
        self._at: float | None = None

    def get(self) -> tuple[Nodes, str | None]:
        """The nodes and None, or no nodes and why `sinfo` could not say."""
        with self._lock:
            if self._at is not None and self.clock() - self._at < self.every:
                return self._nodes, None
            try:
                nodes = tuple(model.nodes_from_json(self.slurm.sinfo()))
            except SlurmError as exc:
                self._at = None
                return (), str(exc)
            self._nodes, self._at = nodes, self.clock()
            return nodes, None

    def expire(self) -> None:
        """The next `get` asks sinfo (a refresh the user asked for)."""
        with self._lock:
            self._at = None
