"""The prefixed lines a rank prints into a cluster job's log stream; the target's log mirror
(`targets/ray/mirror.py`) splits them out of it again."""

from __future__ import annotations

RANK_PREFIX = "GAUDI_TUI_RANK "
"""Each rank prints where it runs (node id and IP) once, on a line with this prefix."""
METRIC_PREFIX = "GAUDI_TUI_METRIC "
"""Rank 0 prints each metrics event as one line with this prefix (the supervisor mirrors them)."""
