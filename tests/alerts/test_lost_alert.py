"""The alert for a lost job (issue 38, M7): its supervisor is gone, so `gaudi-tui watch` and the panel
send `Job lost` through the run's ledger, once per attempt and not again after a restart, and not for
a job that just ended (its status read again) or one lost long before anyone looked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time

from gaudi_tui.core import settings
from gaudi_tui.core.alerts.config import AlertConfig
from gaudi_tui.core.alerts.lost import RECENT_S, LostJobs
from gaudi_tui.core.devices.sources.replay import resolve
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus
from gaudi_tui.ui.app import GaudiApp
from tests.alerts.conftest import configure, kept, wait_for
from tests.conftest import CPU, PYTHON, child_env
from tests.jobs.test_lost_confirmed import gone_supervisor
from tests.pilot import settle


def lost_run(name: str) -> tuple[RunFolder, JobStatus]:
    """A run whose status says running and whose supervisor has exited without a word."""
    run = runfolder.create(JobSpec(name=name), accelerator="cpu")
    now = time.time()
    status = JobStatus(state="running", created=now, queued=now, started=now, supervisor=gone_supervisor())
    run.write_status(status)
    return run, status


def watch_until_lost() -> list[str]:
    """`gaudi-tui watch` until its `Job lost` line, then SIGTERM: its lines."""
    child = subprocess.Popen(
        [PYTHON, "-m", "gaudi_tui", "watch", "--replay", "gaudi2-port-down", "--interval", "0.2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
    )  # fmt: skip
    lines: list[str] = []
    assert child.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(child.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        wait_for(lambda: any("Job lost" in line for line in lines), 30, "the lost job's line")
        child.send_signal(signal.SIGTERM)
        assert child.wait(15) == 0
    finally:
        child.kill()
    reader.join(5)
    child.communicate()
    return lines


def test_watch_sends_the_lost_alert_once_and_not_again_after_a_restart() -> None:
    configure(off=["idle_held", "hbm_full", "port_down", "ecc_rising"])
    run, _ = lost_run("oom-killed")
    lines = watch_until_lost()
    said = [line for line in lines if "Job lost" in line]
    assert len(said) == 1 and f"oom-killed ({run.id})" in said[0] and "supervisor is gone" in said[0]
    assert [a.subject for a in kept("job_ended")] == [run.id]
    assert not LostJobs(AlertConfig(), every_s=0).poll()  # a second watcher, or a restart: not again
    assert [a.subject for a in kept("job_ended")] == [run.id]


def test_no_lost_alert_for_a_job_that_just_ended_or_was_lost_long_ago() -> None:
    ended, status = lost_run("just-ended")
    old, _ = lost_run("lost-last-year")
    year_ago = time.time() - 365 * 86400
    for path in (old.status_path, old.spec_path):
        os.utime(path, (year_ago, year_ago))
    lost = LostJobs(AlertConfig(), every_s=0)
    ended.write_status(status.with_(state="succeeded", exit_code=0, ended=time.time()))
    assert lost.poll() == [] and kept() == []
    assert time.time() - year_ago > RECENT_S


def test_one_unreadable_run_does_not_stop_the_others_alerts() -> None:
    broken = runfolder.create(JobSpec(name="broken"), accelerator="cpu")
    data = json.loads(JobStatus(state="running").to_json())
    data["supervisor"] = {"pid": 1e999, "started": 0.0}  # reads as infinity: int() raises OverflowError
    broken.status_path.write_text(json.dumps(data))
    run, _ = lost_run("after-the-broken-one")
    sent = LostJobs(AlertConfig(), every_s=0).poll()
    assert [a.subject for a in sent] == [run.id]


async def test_the_panel_sends_the_lost_alert_and_toasts_it() -> None:
    configure(off=["idle_held", "hbm_full", "port_down", "ecc_rising"])
    run, _ = lost_run("killed-9")
    app = GaudiApp(accelerator=CPU, hostname="h", settings=settings.load(environ={}),
                   replay=resolve("gaudi2-port-down"), alerts=True)  # fmt: skip
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, lambda: any(n.title == "Job lost" for n in app._notifications), 20, "the toast")
        [alert] = [a for a in app.panel_alerts.alerts if a.title == "Job lost"]
        assert alert.subject == run.id and "killed-9" in alert.text
    assert [a.subject for a in kept("job_ended")] == [run.id]
