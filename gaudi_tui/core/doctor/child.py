"""Run one probe (`probe.py`) in a throwaway child process, with the context's limit and cancel."""

from __future__ import annotations

from gaudi_tui.core.childprobe import ProbeCancelled, ProbeFailed, ProbeTimedOut, run_json_child
from gaudi_tui.core.doctor.context import CheckContext

__all__ = ["ProbeCancelled", "ProbeFailed", "ProbeTimedOut", "run_probe"]


def run_probe(ctx: CheckContext, name: str) -> dict[str, object]:
    """Facts the child `python -m gaudi_tui.core.doctor.probe NAME` prints as its last JSON line."""
    try:
        return run_json_child(
            [ctx.python, "-m", "gaudi_tui.core.doctor.probe", name],
            timeout=ctx.timeout,
            env=ctx.env,
            cancel=ctx.cancel,
            on_start=ctx.track_child,
        )
    except ProbeFailed as exc:
        raise ProbeFailed(f"the probe child exited with code {str(exc).removeprefix('exit ')}") from None
