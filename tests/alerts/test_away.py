"""What happened while the panel was closed (issue 42 item 1): the counting in core
(`core/alerts/away.py`: jobs ended since the last-open stamp, by how; the alerts sent since), and
the panel saying it once, in one line, when it opens again — and nothing at its first open."""

from __future__ import annotations

import time

from gaudi_tui.core import settings
from gaudi_tui.core.alerts import away, store
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.devices.sources.replay import resolve
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus, ProcRef
from gaudi_tui.ui.app import GaudiApp
from tests.conftest import CPU
from tests.pilot import settle

NOW = time.time()


def _run(name: str, status: JobStatus) -> None:
    run = runfolder.create(JobSpec(name=name, max_steps=1), "cpu", now=status.created)
    run.write_status(status)


def _ended(name: str, state: str, ended: float) -> None:
    _run(name, JobStatus(state=state, created=ended - 60, queued=ended - 60, started=ended - 50, ended=ended))  # type: ignore[arg-type]


def _card_alert(at: float) -> Alert:
    return Alert("port_down", "critical", "h card 3", "Scale-out port down", "h card 3: port 8 is down",
                 "port-down:h:3:8", time=at)  # fmt: skip


def test_counts_what_ended_and_what_was_sent_since_the_stamp() -> None:
    since = NOW - 100
    _ended("old", "failed", NOW - 500)  # before the stamp: not counted
    _ended("ok", "succeeded", NOW - 50)
    _ended("bad", "failed", NOW - 40)
    _ended("halted", "stopped", NOW - 30)
    gone = ProcRef(pid=2**22 + 7, started=NOW - 90, ticks=1)  # no such process: the supervisor is gone
    _run(
        "lost",
        JobStatus(state="running", created=NOW - 95, queued=NOW - 95, started=NOW - 90, supervisor=gone),
    )
    store.append(_card_alert(NOW - 20))
    store.append(_card_alert(NOW - 500))  # before the stamp
    store.append(Alert("job_ended", "critical", "r1", "Job failed", "bad (r1)", "r1:ended:1", time=NOW - 40))
    store.append(Alert("job_stalled", "warning", "r2", "Job stalled", "…", "r2:stalled:1:5", time=NOW - 10))

    found = away.count_since(since, NOW)

    assert dict(found.ended) == {"succeeded": 1, "failed": 1, "stopped": 1, "lost": 1}
    assert (found.card_alerts, found.job_alerts) == (1, 1)
    assert found.line() == (
        "while you were away: 4 jobs ended (1 failed, 1 lost, 1 stopped), 1 card alert, 1 job alert — ! lists them"
    )
    assert away.Away(since).line() is None


def test_the_stamp_moves_and_a_first_open_has_nothing_to_say() -> None:
    assert away.last_open() is None
    assert away.since_last_open(NOW - 10) is None  # never open before
    assert away.last_open() == NOW - 10
    away.stamp_path().write_text("{not json", encoding="utf-8")
    assert away.last_open() is None  # an unreadable stamp is no stamp


def _panel() -> GaudiApp:
    return GaudiApp(accelerator=CPU, hostname="h", settings=settings.load(environ={}),
                    replay=resolve("gaudi2"), alerts=True)  # fmt: skip


def _said(app: GaudiApp) -> list[str]:
    return [n.message for n in app._notifications if "while you were away" in n.message]


async def test_the_panel_says_once_what_ended_while_it_was_closed() -> None:
    away.mark_open(NOW - 300)  # the panel was open, then closed; a job failed after that
    _ended("tiny", "failed", NOW - 60)
    store.append(_card_alert(NOW - 30))
    app = _panel()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: app.panel_alerts.greeted, what="the greeting")
        assert _said(app) == ["while you were away: 1 job ended (1 failed), 1 card alert — ! lists them"]
    stamp = away.last_open()
    assert stamp is not None and stamp >= NOW  # moved when it opened and again when it quit


async def test_the_panel_says_nothing_at_its_first_open() -> None:
    _ended("tiny", "failed", NOW - 60)
    app = _panel()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: app.panel_alerts.greeted, what="the greeting")
        assert _said(app) == []
        assert away.last_open() is not None  # the next open has a stamp to count from
