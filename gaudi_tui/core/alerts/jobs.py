"""A job's alerts, from its supervisor: it ended (succeeded, failed with its error line, stopped,
cancelled), it stalled (no step for `stall_factor` × its usual step time, at least
`stall_min_s`), and the insight's findings (`INSIGHT_ALERTS`, thresholds the insight's): from
Intel's runtime file still compiling after warm-up and HBM near full; from torch's signals on every
accelerator a frame that hit `recompile_limit`, torch.compile still recompiling after warm-up, and
input wait above 20 % of step time; once per attempt each.

`JobAlerts.on_save` sees every status the supervisor writes (whatever the target), so the end of an
attempt is seen where it is recorded. The stall and insight checks are a daemon thread reading
metrics.jsonl (and the runtime's metrics files) by offset; after each round it writes
`<run>/alerts/checks.json` ({"checks": rounds so far, "time": the last one's, "stalled": how many
checks in a row found the job stalled}), so anyone can see the watch is alive and what it sees.
The ledger is in the run folder: a re-attached supervisor does not repeat an alert the first one
sent. A failure here is written to supervisor.log (once while a check keeps failing) and never
stops the supervisor, nor the other checks.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
from collections.abc import Callable
from functools import partial

from gaudi_tui.core.alerts import config as alert_config
from gaudi_tui.core.alerts.config import AlertConfig
from gaudi_tui.core.alerts.deliver import dispatch
from gaudi_tui.core.alerts.model import Alert, Severity
from gaudi_tui.core.alerts.store import Ledger
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import TERMINAL, JobStatus
from gaudi_tui.core.jobs.summary import SummaryReader
from gaudi_tui.core.untrusted.files import write_atomic

ENDED: dict[str, tuple[Severity, str]] = {
    "succeeded": ("info", "Job succeeded"),
    "failed": ("critical", "Job failed"),
    "cancelled": ("warning", "Job cancelled"),
    "stopped": ("info", "Job stopped"),
    "lost": ("critical", "Job lost"),
}
CHECKS_FILE = "checks.json"

INSIGHT_ALERTS: dict[str, tuple[str, str]] = {
    "recompiling": ("compiling", "Still compiling after warm-up"),
    "hbm-full": ("hbm_full", "HBM near full"),
    "compile-limit": ("compile_limit", "A frame hit torch.compile's recompile limit"),
    "torch-recompiling": ("torch_recompiling", "Still recompiling after warm-up (torch.compile)"),
    "input-stall": ("input_stall", "Waiting for data"),
}
"""Finding id → (alert kind, title). Intel's runtime file gives the first two, torch's signals
(`core/insight/compiles.py`, `stalls.py`) the others; each is sent once per attempt."""


def duration(seconds: float) -> str:
    seconds = int(max(0.0, seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


class JobAlerts:
    def __init__(self, run: RunFolder, spec: JobSpec, config: AlertConfig | None = None) -> None:
        self.run, self.spec = run, spec
        if config is None:
            config, problems = alert_config.load()
            for problem in problems:
                print(f"alerts: {problem}", file=sys.stderr, flush=True)
        self.config = config
        self.ledger = Ledger(run.path / "alerts")
        self.checks = 0
        self.stalled_checks = 0
        """Checks in a row that found the job stalled (0 once a step comes)."""

    def send(self, alert: Alert) -> None:
        try:
            dispatch(alert, self.ledger, self.config)
        except Exception:  # noqa: BLE001 - an alert must never end the supervisor
            print(f"alerts: cannot send {alert.key}:\n{traceback.format_exc()}", file=sys.stderr, flush=True)

    def on_save(self, status: JobStatus) -> None:
        """Called with every status written; the end of an attempt sends its alert once."""
        if status.state not in TERMINAL or not self.run.path.is_dir():
            return
        severity, title = ENDED.get(status.state, ("warning", f"Job {status.state}"))
        words = [f"{self.spec.name} ({self.run.id})"]
        if status.started is not None:
            words.append(f"after {duration(status.elapsed(time.time()))}")
        if status.error:
            words.append(f"— {status.error}")
        key = f"{self.run.id}:ended:{status.attempt}"
        self.send(Alert("job_ended", severity, self.run.id, title, " ".join(words), key))

    def watch(self, status: Callable[[], JobStatus]) -> threading.Thread:
        """The stall and insight checks, in a daemon thread, while the attempt runs."""
        thread = threading.Thread(target=self._watch, args=(status,), name="job-alerts", daemon=True)
        thread.start()
        return thread

    def _watch(self, status: Callable[[], JobStatus]) -> None:
        reader = SummaryReader(self.run.metrics_path)
        insight = InsightWatcher(self.run)
        poll_s = min(5.0, max(0.2, self.config.stall_min_s / 10))
        failing: set[str] = set()
        while True:
            time.sleep(poll_s)
            now = status()
            if now.state in TERMINAL:
                return
            self._check("stall", partial(self._stall_check, reader, now), failing)
            self._check("insight", partial(self._insight_check, insight, now.attempt), failing)
            self.checks += 1
            self._check("record", self._record, failing)

    def _stall_check(self, reader: SummaryReader, status: JobStatus) -> None:
        reader.poll()
        alert = self.stalled(reader, status.attempt) if status.state == "running" else None
        self.stalled_checks = self.stalled_checks + 1 if alert else 0
        if alert:
            self.send(alert)

    def _record(self) -> None:
        """checks.json: the watch's rounds, the last one's time, and the stall checks in a row."""
        folder = self.ledger.folder
        folder.mkdir(mode=0o700, exist_ok=True)  # never its parent: a deleted run folder stays deleted
        record = {"checks": self.checks, "time": time.time(), "stalled": self.stalled_checks}
        write_atomic(folder / CHECKS_FILE, json.dumps(record) + "\n")

    def _insight_check(self, insight: InsightWatcher, attempt: int) -> None:
        for alert in self.from_insight(insight, attempt):
            self.send(alert)

    def _check(self, name: str, check: Callable[[], None], failing: set[str]) -> None:
        """One of the job's checks: what it raises goes to supervisor.log once (while it keeps
        raising) and the other checks, and this one at the next poll, go on."""
        try:
            check()
        except Exception:  # noqa: BLE001 - one check's failure never ends the others, nor the job
            if name not in failing:
                failing.add(name)
                print(f"alerts: the {name} check failed (it is tried again at each poll; the "
                      f"other checks go on):\n{traceback.format_exc()}", file=sys.stderr, flush=True)  # fmt: skip
        else:
            failing.discard(name)

    def from_insight(self, insight: InsightWatcher, attempt: int) -> list[Alert]:
        """The insight's findings that are alerts (`INSIGHT_ALERTS`)."""
        insight.poll()
        alerts = []
        for finding in insight.insight().findings:
            if finding.id in INSIGHT_ALERTS:
                kind, title = INSIGHT_ALERTS[finding.id]
                text = f"{self.spec.name} ({self.run.id}): {finding.text}. {finding.fix}"
                alerts.append(
                    Alert(kind, "warning", self.run.id, title, text, f"{self.run.id}:{kind}:{attempt}")
                )
        return alerts

    def stalled(self, reader: SummaryReader, attempt: int) -> Alert | None:
        summary = reader.summary
        per_step = summary.seconds_per_step()
        if summary.last_step is None or summary.ended_step is not None or per_step is None:
            return None
        bound = max(self.config.stall_min_s, self.config.stall_factor * per_step)
        quiet = time.time() - summary.points()[-1][1]
        if quiet <= bound:
            return None
        text = (
            f"{self.spec.name} ({self.run.id}): no step since step {summary.last_step} for "
            f"{duration(quiet)} (a step usually takes {per_step:.2g} s)"
        )
        key = f"{self.run.id}:stalled:{attempt}:{summary.last_step}"
        return Alert("job_stalled", "warning", self.run.id, "Job stalled", text, key)
