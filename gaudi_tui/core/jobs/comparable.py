"""Which runs compare side by side (`compare.py`, the Training screen's `C`, `gaudi-tui jobs
compare`): training runs, of any target, the Trainer kind or a command. A serve job is refused with
the reason: it has no steps, loss or throughput to set beside a fine-tune's (every figure would be
"—"), and its fields (engine, port) would fill the diff; its own figures are on the Training
screen's Serve pane and in Chat."""

from __future__ import annotations

from collections.abc import Mapping

from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import SpecError

NOT_COMPARED = frozenset({"serve"})
"""Kinds that are not compared."""


def kind_of(run: RunFolder) -> str | None:
    """The run's kind, None where its spec cannot be read (compare shows such a run with dashes)."""
    try:
        return run.row_spec().kind
    except SpecError:
        return None


def refusal(kinds: Mapping[str, str | None]) -> str | None:
    """Why these runs (id → kind) are not compared, None when they are."""
    serving = [run_id for run_id, kind in kinds.items() if kind in NOT_COMPARED]
    if not serving:
        return None
    which = ", ".join(serving)
    verb = "is a serve job" if len(serving) == 1 else "are serve jobs"
    return (
        f"{which} {verb}: a model server has no steps, loss or throughput to compare with a training "
        "run; compare training or command runs only"
    )
