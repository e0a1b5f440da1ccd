"""The fault drill: one Ray job watched through a loopback proxy (tests/ray/proxy.py) that plays a
tunnel's faults, while the panel's commands are used on it.

It passes when no second attempt ever starts, no metric line is lost or duplicated (metrics.jsonl
equals the metric lines of the job's own log on the cluster), and every command returns within its
stated bound with a message that says what happened. One job for every fault keeps it lean.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from gaudi_tui.core.jobs import control, targets
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.status import ProcRef
from gaudi_tui.core.jobs.targets.ray import cluster
from gaudi_tui.core.jobs.targets.ray import record as ray_record
from gaudi_tui.core.jobs.worker.logstream import METRIC_PREFIX
from tests.conftest import PYTHON, child_env
from tests.jobs.conftest import processes_of, replay
from tests.ray.cluster import RayTestCluster
from tests.ray.proxy import Proxy
from tests.ray.test_ray_jobs import log_steps, ray_spec, state_of, submit_when_free, wait, wait_done

pytestmark = pytest.mark.slow

TIMEOUT_S = 3.0
BOUND_S = 4 * TIMEOUT_S + 5
"""What r or k may take while the dashboard does not answer: two requests (the state, then the
stop), each at its limit (GAUDI_TUI_RAY_TIMEOUT_S), with slack for 2 shared cores."""


@pytest.fixture(autouse=True)
def short_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GAUDI_TUI_RAY_TIMEOUT_S", str(TIMEOUT_S))  # the supervisors inherit it


@pytest.fixture
def proxy(ray_cluster: RayTestCluster) -> Iterator[Proxy]:
    tunnel = Proxy(ray_cluster.dashboard_port)
    try:
        yield tunnel
    finally:
        tunnel.close()


def timed(action: Callable[[], object]) -> tuple[float, object]:
    """Run `action`; how long it took and what it returned or raised."""
    start = time.monotonic()
    try:
        result: object = action()
    except control.JobControlError as exc:
        result = exc
    return time.monotonic() - start, result


def notes(run: RunFolder) -> str:
    return "\n".join(line for line in run.log_path.read_text().splitlines() if line.startswith("[gaudi-tui]"))


def supervisors(home: object) -> list[int]:
    return [p.pid for p in processes_of(home) if "gaudi_tui.core.jobs.supervisor" in " ".join(p.cmdline())]  # type: ignore[arg-type]


def metric_lines_on_the_cluster(address: str, sid: str) -> list[str]:
    """The metric events as the job printed them, read from the cluster (not through the proxy),
    with Ray's exact repeats dropped as the mirror drops them."""
    from ray.job_submission import JobSubmissionClient

    seen: list[str] = []
    for line in JobSubmissionClient(address).get_job_logs(sid).splitlines():
        if METRIC_PREFIX in line:
            payload = line.split(METRIC_PREFIX, 1)[1].strip()
            if payload not in seen and _is_event(payload):
                seen.append(payload)
    return seen


def _is_event(payload: str) -> bool:
    try:
        return isinstance(json.loads(payload), dict)
    except ValueError:
        return False


def test_the_drill(ray_cluster: RayTestCluster, proxy: Proxy, gaudi_home: object) -> None:
    run = submit_when_free(
        ray_spec(ray_cluster, ray_address=proxy.address, workers=1, max_steps=100_000, save_steps=0)
    )
    wait(lambda: len(log_steps(run)) >= 2, 150, "the first metrics", run)
    sid = f"gaudi-tui-{run.id}-a1"

    # 1. The tunnel drops mid-job, then comes back: the supervisor says so and mirrors on.
    proxy.set("cut")
    wait(lambda: "does not answer" in notes(run), 20, "the supervisor to notice", run)
    proxy.set("open")
    wait(lambda: "answers again" in notes(run), 30, "the supervisor to notice it is back", run)
    seen = len(log_steps(run))
    wait(lambda: len(log_steps(run)) > seen, 60, "metrics after the blip", run)

    # 2. A listener that accepts and never answers: every request gives up at its limit.
    proxy.set("hang")
    wait(lambda: "did not answer" in notes(run) or "timed out" in notes(run), 60, "a timeout", run)

    # 3. The supervisor is SIGKILLed while the tunnel hangs: r and k return within their bound,
    #    say that the job may still run, and start or end nothing.
    status = run.status()
    assert status is not None and status.supervisor is not None
    os.kill(status.supervisor.pid, signal.SIGKILL)
    wait(lambda: state_of(run) == "lost", 10, "the job to show as lost")
    took, said = timed(lambda: control.resume(run))
    assert took < BOUND_S and isinstance(said, control.JobControlError), said
    assert "may still run" in str(said) and "did not answer" in str(said), said
    took, said = timed(lambda: control.kill(run))
    assert took < BOUND_S and isinstance(said, control.JobControlError), said
    assert "did not answer" in str(said), said
    assert supervisors(gaudi_home) == []

    # 4. The tunnel is back: `r` twice at once re-attaches once; the second is refused.
    proxy.set("open")
    answers: list[object] = []
    both = [
        threading.Thread(target=lambda: answers.append(timed(lambda: control.resume(run))[1])) for _ in "ab"
    ]
    for thread in both:
        thread.start()
    for thread in both:
        thread.join(60)
    done = [a for a in answers if isinstance(a, str)]
    refused = [a for a in answers if isinstance(a, control.JobControlError)]
    assert len(done) == 1 and done[0].startswith("re-attached"), answers
    assert len(refused) == 1, answers
    took, said = timed(lambda: control.resume(run))  # and once more right after: it runs
    assert isinstance(said, control.JobControlError) and "still running" in str(said), said
    wait(lambda: len(supervisors(gaudi_home)) == 1, 20, "one supervisor")
    seen = len(log_steps(run))
    wait(lambda: len(log_steps(run)) > seen, 60, "metrics after the re-attach", run)

    # 5. k k during a blip, and the supervisor SIGKILLed before it could send the stop: the kill
    #    is kept, and the supervisor that re-attaches once the cluster answers does it.
    proxy.set("cut")
    wait(lambda: "does not answer" in notes(run), 20, "the supervisor to notice the blip", run)
    took, said = timed(lambda: control.kill(run))
    assert took < 2 and isinstance(said, str) and said.startswith("killing"), said
    wait(lambda: "cannot stop the job yet" in notes(run), 20, "the stop to be kept", run)
    status = run.status()
    assert status is not None and status.kill_requested and status.state == "stopping"
    assert status.supervisor is not None
    os.kill(status.supervisor.pid, signal.SIGKILL)
    wait(lambda: state_of(run) == "lost", 10, "the job to show as lost")
    proxy.set("open")
    said = control.resume(run)
    assert said.startswith("re-attached: Ray job") and "RUNNING" in said, said
    assert wait_done(run, 90) == "cancelled"
    final = run.status()
    # Exactly: the detached actor Ray Train leaves on the cluster (its AutoscalingCoordinator, made
    # by the first training job) is not the job's, and held this kill for a minute when counted.
    assert final is not None and final.error == "killed on the cluster", final.error
    assert final.attempt == 1

    # Never a second attempt; every metric line once, in order.
    record = ray_record.read_record(run)
    assert record is not None and record.submission_id == sid
    assert cluster.job_state_at(ray_cluster.address, sid) == "STOPPED"
    mirrored = run.metrics_path.read_text().splitlines()
    assert mirrored == metric_lines_on_the_cluster(ray_cluster.address, sid)
    steps = log_steps(run)
    assert steps == sorted(set(steps))
    assert json.loads(mirrored[0])["event"] == "begin"


def test_a_job_the_cluster_no_longer_knows_ends_failed_and_resumable(ray_cluster: RayTestCluster) -> None:
    """What a head restart leaves: the run names a submission the cluster does not have."""
    run = replay(recorded="ray-runs")
    record = ray_record.read_record(run)
    assert record is not None
    ray_record.write_record(run, replace(record, address=ray_cluster.address))
    status = run.status()
    assert status is not None
    run.write_status(status.with_(state="running", supervisor=ProcRef(1, 0.0)))
    presence = targets.for_spec(run.spec()).presence(run, run.status())  # type: ignore[arg-type]
    assert presence.where == "ended" and "not known to the cluster" in presence.reason
    argv = [PYTHON, "-m", "gaudi_tui.core.jobs.supervisor", str(run.path), "--attach"]
    done = subprocess.run(argv, env=child_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    final = run.status()
    assert final is not None and final.state == "failed" and final.error is not None
    assert "is no longer known to the cluster" in final.error and "resumable" in final.error
