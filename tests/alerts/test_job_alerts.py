"""A job's alerts from its real supervisor (issue 30 items 2, 3, 6): a command job that steps, is
stopped with SIGSTOP (one stall alert, however long it stays stopped), then ends (one "ended"
alert, which a re-attached supervisor does not send again); and a webhook that is down, then slow,
then up, which gets the end once while the job and its supervisor were long gone."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import threading
from pathlib import Path

import pytest

from gaudi_tui.core.alerts import deliver
from gaudi_tui.core.alerts.config import AlertConfig
from gaudi_tui.core.alerts.jobs import CHECKS_FILE, JobAlerts
from gaudi_tui.core.jobs import runfolder, supervisor
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from gaudi_tui.core.jobs.kinds import command
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import TERMINAL, JobStatus
from tests.alerts.conftest import configure, kept, wait_for
from tests.conftest import PYTHON
from tests.insight.test_recorded_runs import replay as recorded
from tests.jobs.conftest import events, wait_done

pytestmark = pytest.mark.slow

STEPPER = """
import json, os, sys, time
step = 0
while not os.path.exists(sys.argv[1]):
    step += 1
    print(json.dumps({"step": step, "loss": 1.0 / step}), flush=True)
    time.sleep(0.1)
"""
"""A user's command: a step every 0.1 s (a JSON line the panel reads) until the file argv[1] exists."""


def start_command(tmp_path: Path, argv: list[str]) -> runfolder.RunFolder:
    spec = command.prepare(
        JobSpec(kind="command", name="stepper", command=argv, workdir=str(tmp_path), device="cpu",
                metrics_source="json")
    )  # fmt: skip
    run = runfolder.create(spec, accelerator="cpu")
    supervisor.start(run)
    return run


def checks(run: runfolder.RunFolder) -> dict[str, float]:
    """The supervisor's alert watch's own record (`<run>/alerts/checks.json`): its rounds so far and
    how many checks in a row found the job stalled; {} before its first round."""
    try:
        return dict(json.loads((run.path / "alerts" / CHECKS_FILE).read_text()))
    except (OSError, ValueError):
        return {}


def test_a_stopped_job_stalls_once_and_ends_once(tmp_path: Path) -> None:
    # a step each 0.1 s: stalled after 3 s without one (30 steps' time: a loaded machine's pauses
    # stay under it); the supervisor checks each 0.3 s
    configure(stall_factor=10, stall_min_s=3.0)
    finish = tmp_path / "finish"
    run = start_command(tmp_path, [PYTHON, "-c", STEPPER, str(finish)])
    wait_for(lambda: len(events(run, "log")) >= 5, 60, "five steps")
    seen = checks(run).get("checks", 0)
    wait_for(lambda: checks(run).get("checks", 0) >= seen + 3, 30, "three checks while it steps")
    assert kept() == [] and checks(run)["stalled"] == 0  # stepping steadily: nothing to say
    launcher = run.status().launcher  # type: ignore[union-attr]
    assert launcher is not None
    os.killpg(launcher.pid, signal.SIGSTOP)
    try:
        (stalled,) = wait_for(lambda: kept("job_stalled"), 30, "the stall alert")  # type: ignore[misc]
        assert stalled.subject == run.id and stalled.title == "Job stalled"
        assert "stepper" in stalled.text and "a step usually takes" in stalled.text
        # the supervisor found it stalled at four more checks after the one that sent the alert
        wait_for(lambda: checks(run).get("stalled", 0) >= 5, 30, "five checks in a row that found it stalled")
        assert len(kept("job_stalled")) == 1
    finally:
        os.killpg(launcher.pid, signal.SIGCONT)
        finish.touch()
    assert wait_done(run, 60) == "succeeded"
    (ended,) = wait_for(lambda: kept("job_ended"), 10, "the end alert")  # type: ignore[misc]
    assert ended.title == "Job succeeded" and ended.severity == "info" and run.id in ended.text
    assert ended.key == f"{run.id}:ended:1"
    # A supervisor re-attached to the run saves its end again: the run's ledger says it was sent.
    again = supervisor.Supervisor(run, None, attach=True)
    again.save(state="succeeded")
    assert len(kept("job_ended")) == 1 and len(kept("job_stalled")) == 1


def test_a_failed_job_says_its_error_line(tmp_path: Path) -> None:
    run = start_command(tmp_path, [PYTHON, "-c", "import sys; print('CUDA out of memory here'); sys.exit(3)"])
    assert wait_done(run, 60) == "failed"
    (ended,) = wait_for(lambda: kept("job_ended"), 10, "the end alert")  # type: ignore[misc]
    assert ended.title == "Job failed" and ended.severity == "critical"
    assert run.status().error in ended.text  # type: ignore[union-attr]


def test_alerts_turned_off_are_not_sent(tmp_path: Path) -> None:
    configure(off=["job_ended"])
    run = start_command(tmp_path, [PYTHON, "-c", "print('done')"])
    assert wait_done(run, 60) == "succeeded"
    wait_for(lambda: not run.status().supervisor.alive(), 10, "the supervisor to exit")  # type: ignore[union-attr]
    assert kept() == []


class Hook(http.server.BaseHTTPRequestHandler):
    """A webhook receiver that holds the first request it gets unanswered until `release` is set
    (a slow webhook, for as long as the test needs), and answers every later one at once."""

    release = threading.Event()
    lock = threading.Lock()
    held: list[bytes] = []
    received: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.lock:
            first = not self.held
            (self.held if first else self.received).append(body)
        if first:
            self.release.wait(60)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_a_webhook_down_then_slow_then_up_gets_the_end_once_and_never_holds_the_job(tmp_path: Path) -> None:
    """Down (the port bound, nothing listening: refused), then slow (listening, the first request
    held past the 1 s timeout), then up: each change waits for what the deliveries log says, and a
    loaded machine that is late to listen only spends more of the five tries on "refused"."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook, bind_and_activate=False)
    server.server_bind()  # the port is this test's; connections are refused until it listens
    port = server.server_address[1]
    secret = "T0KEN-SECRET-9f3a"
    configure(webhook=f"http://127.0.0.1:{port}/hooks/{secret}", timeout_s=1.0, retries=4, retry_s=1.0)
    run = start_command(tmp_path, [PYTHON, "-c", "print('done')"])
    log = deliver.log_path()

    def said(words: str) -> bool:
        return log.exists() and words in log.read_text()

    serving = threading.Thread(target=server.serve_forever, daemon=True)
    try:
        wait_for(
            lambda: said("try 1 failed: Connection refused"), 60, "the first try, refused (nothing listens)"
        )
        server.server_activate()
        serving.start()
        # the job is over and its supervisor gone while the webhook has not had the alert
        wait_for(lambda: run.status().state in TERMINAL, 10, "the job's end")  # type: ignore[union-attr]
        wait_for(lambda: not run.status().supervisor.alive(), 10, "the supervisor to exit")  # type: ignore[union-attr]
        assert Hook.received == []
        wait_for(lambda: said("failed: no answer in 1 s"), 30, "a try held unanswered past its timeout")
        assert len(Hook.held) == 1 and Hook.received == []
        Hook.release.set()
        wait_for(lambda: said("delivered (try"), 30, "the next try, delivered")
    finally:
        Hook.release.set()
        if serving.is_alive():  # shutdown() waits for serve_forever: never started, it would wait forever
            server.shutdown()
        server.server_close()
    tries = [line.split(": ", 2)[-1] for line in log.read_text().splitlines() if "webhook" in line]
    refused = len(tries) - 2
    assert refused >= 1 and tries[:refused] == [
        f"try {n} failed: Connection refused" for n in range(1, refused + 1)
    ]
    assert tries[refused:] == [
        f"try {refused + 1} failed: no answer in 1 s",
        f"delivered (try {refused + 2})",
    ]
    (body,) = Hook.received
    assert b"Job succeeded" in body and run.id.encode() in body
    shown = log.read_text() + (run.path / "supervisor.log").read_text()
    assert secret not in shown and "127.0.0.1" in log.read_text()  # the host is named, never the token
    assert len(kept("job_ended")) == 1


def test_the_end_of_a_job_whose_folder_was_deleted_does_not_make_the_folder_again(tmp_path: Path) -> None:
    spec = command.prepare(
        JobSpec(kind="command", command=[PYTHON, "-c", "pass"], workdir=str(tmp_path), device="cpu")
    )
    run = runfolder.create(spec, accelerator="cpu")
    alerts = JobAlerts(run, spec, AlertConfig())
    shutil.rmtree(run.path)  # the supervisor kills a job whose folder is deleted, then saves its end
    alerts.on_save(JobStatus(state="cancelled", error="killed (exit -15)"))
    assert not run.path.exists() and kept() == []


def test_a_recorded_run_still_compiling_after_warm_up_alerts_once_per_attempt() -> None:
    """The fake-runtime recordings of tests/insight (README there): variable lengths compile on;
    padded ones settle."""
    variable, padded = recorded("variable"), recorded("padded")
    for run in (variable, padded):
        alerts = JobAlerts(run, run.spec(), AlertConfig())
        watcher = InsightWatcher(run)
        for _ in range(3):  # three checks of the supervisor: the finding holds each time
            for alert in alerts.from_insight(watcher, 1):
                alerts.send(alert)
    (compiling,) = kept()
    assert compiling.kind == "compiling" and compiling.subject == variable.id
    assert "still compiling after warm-up" in compiling.text and "pad_to_multiple_of" in compiling.text
