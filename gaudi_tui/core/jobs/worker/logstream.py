"""The prefixed lines a cluster job prints into its log stream; the target's log mirror
(`targets/ray/mirror.py`) splits them out of it again. Standard library only: the wrapper of a
user's command imports it too."""

from __future__ import annotations

RANK_PREFIX = "GAUDI_TUI_RANK "
"""Each rank prints where it runs (node id and IP) once, on a line with this prefix."""
METRIC_PREFIX = "GAUDI_TUI_METRIC "
"""Rank 0 prints each metrics event as one line with this prefix (the supervisor mirrors them)."""
WRAPPER_PREFIX = "GAUDI_TUI_WRAPPER "
"""The Trainer callback in a user's command prints its marker (`WRAPPER_MARKER`) on this line; the
mirror writes it into the panel's run folder (graceful stop words, the output reader muted)."""
STOPPED_PREFIX = "GAUDI_TUI_STOPPED "
"""The entry driver of a command prints `{"signal": …}` here when it ended the command by signals
after a stop (no Trainer callback ran): the attempt is then stopped, not failed."""
WRAPPER_MARKER = "wrapper.json"
"""Written into the run folder by the callback when a Trainer of this attempt starts training."""
LOG_METRICS_ENV = "GAUDI_TUI_LOG_METRICS"
"""Set (to 1) in a command's environment on a cluster: the callback prints its events as
`METRIC_PREFIX` lines on stdout (the log stream) instead of writing metrics.jsonl."""
