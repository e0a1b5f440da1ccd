"""Run checks concurrently, each in its own thread with its own limit; report each result as it lands.

A check past its limit is reported as "timed out" and left behind (its thread is a daemon; a
child process it started is killed by `child.run_probe` at the same limit). Cancelling returns
promptly, after the checks' children are gone.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence

from gaudi_tui.core.doctor.child import ProbeCancelled, ProbeTimedOut
from gaudi_tui.core.doctor.context import CheckContext
from gaudi_tui.core.doctor.model import Check, CheckResult, CheckVerdict, fail

CHILD_GRACE_S = 1.0
JOIN_ON_CANCEL_S = 2.0
POLL_S = 0.05


def timed_out(check: Check, seconds: float) -> CheckVerdict:
    hung = (
        "importing habana_frameworks or calling is_torch_hpu_available() hung in the child process, "
        "which was stopped. That happens when the card cannot be acquired (see cards.busy) or the "
        "driver does not answer (see driver.loaded)."
        if check.isolated
        else "the check did not finish in time (a slow filesystem, network or hl-smi)."
    )
    return fail(
        f"timed out after {seconds:g} s",
        f"The check was given {seconds:g} s: {hung}",
        "Run it again with a longer limit: `gaudi-tui check --timeout 60`.",
    )


def run_one(check: Check, ctx: CheckContext) -> CheckVerdict:
    """The check's outcome; a crash becomes a failed result instead of an exception."""
    try:
        return check.run(ctx)
    except ProbeTimedOut as exc:
        return timed_out(check, exc.seconds)
    except ProbeCancelled:
        return fail("cancelled")  # never reported: the runner stops at a cancel
    except Exception as exc:  # noqa: BLE001 - one broken check must not take the checklist down
        return fail(
            f"the check itself failed: {type(exc).__name__}: {exc}",
            "This is a bug in gaudi-tui's doctor, not a finding about this host; please report it.",
        )


def run_checks(
    checks: Sequence[Check],
    ctx: CheckContext,
    on_result: Callable[[CheckResult], object] | None = None,
    max_parallel: int | None = None,
) -> list[CheckResult]:
    """Results in the order of `checks` (those finished before a cancel, if cancelled)."""
    limit = max_parallel or len(checks)
    landed: queue.Queue[tuple[Check, CheckVerdict, float]] = queue.Queue()
    started: dict[str, float] = {}
    threads: list[threading.Thread] = []
    results: dict[str, CheckResult] = {}
    waiting = list(checks)

    def work(check: Check, start: float) -> None:
        outcome = run_one(check, ctx)
        landed.put((check, outcome, time.monotonic() - start))

    def report(check: Check, outcome: CheckVerdict, seconds: float) -> None:
        results[check.id] = CheckResult.of(check, outcome, seconds)
        if on_result is not None:
            on_result(results[check.id])

    while len(results) < len(checks) and not ctx.cancel.is_set():
        while waiting and len(started) - len(results) < limit:
            check = waiting.pop(0)
            started[check.id] = time.monotonic()
            thread = threading.Thread(
                target=work, args=(check, started[check.id]), name=f"check {check.id}", daemon=True
            )
            threads.append(thread)
            thread.start()
        try:
            check, outcome, seconds = landed.get(timeout=POLL_S)
        except queue.Empty:
            now = time.monotonic()
            for check in checks:
                allowed = ctx.timeout + (CHILD_GRACE_S if check.isolated else 0.0)
                if check.id in started and check.id not in results and now - started[check.id] > allowed:
                    report(check, timed_out(check, ctx.timeout), now - started[check.id])
            continue
        if ctx.cancel.is_set():
            break
        if check.id not in results:
            report(check, outcome, seconds)
    if ctx.cancel.is_set():
        deadline = time.monotonic() + JOIN_ON_CANCEL_S
        for thread in threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
    return [results[c.id] for c in checks if c.id in results]
