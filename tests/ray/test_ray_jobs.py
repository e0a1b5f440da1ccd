"""Ray cluster jobs against the real two-node cluster of conftest.py (loopback only).

The order matters: the last test kills the second node.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Input, Select, Static

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.jobs import control, runfolder
from gaudi_tui.core.jobs.monitor import RunWatcher
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import TERMINAL, effective_state
from gaudi_tui.core.jobs.tailing import MetricsReader
from gaudi_tui.core.jobs.targets.ray import checks, cluster
from gaudi_tui.core.jobs.targets.ray import nodes as ray_nodes
from gaudi_tui.core.jobs.targets.ray import record as ray_record
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.job_form import JobFormScreen
from gaudi_tui.ui.screens.training import TrainingScreen
from tests.conftest import USER_SETTINGS
from tests.pilot import settle
from tests.ray.cluster import ROOT, RayTestCluster, free_port

CPU = Accelerator("cpu", "test")


def ray_spec(cluster: RayTestCluster, **changes: object) -> JobSpec:
    """The demo fine-tune, small enough for 2 shared cores, as 2 Ray workers (one per node)."""
    base: dict[str, object] = {
        "max_seq_len": 64,
        "batch_size": 8,
        "max_steps": 20,
        "warmup_steps": 2,
        "logging_steps": 1,
        "device": "cpu",
        "target": "ray",
        "ray_address": cluster.address,
        "workers": 2,
        # The second node has the fake habana_frameworks on its path (for Ray's HPU detection);
        # the training processes must not see it.
        "env": {"PYTHONPATH": str(ROOT)},
    }
    base.update(changes)
    return JobSpec(**base)  # type: ignore[arg-type]


def wait(predicate, timeout: float, what: str, run: RunFolder | None = None):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    tail = run.log_path.read_text(errors="replace")[-3000:] if run and run.log_path.exists() else ""
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n{tail}")


def submit_when_free(spec: JobSpec) -> RunFolder:
    """Submit once the cluster reports its CPUs free again (its usage report lags a job's end)."""
    wait(lambda: not checks.check(spec)[1], 60, "the cluster's CPUs to be free")
    return control.submit(spec, CPU)


def state_of(run: RunFolder) -> str:
    status = run.status()
    return effective_state(status, time.time()) if status else "none"


def wait_done(run: RunFolder, timeout: float = 240) -> str:
    return wait(lambda: state_of(run) if state_of(run) in TERMINAL else None, timeout, "the job to end", run)


def log_steps(run: RunFolder) -> list[int]:
    rows = (
        [json.loads(x) for x in run.metrics_path.read_text().splitlines()]
        if run.metrics_path.exists()
        else []
    )
    return [r["step"] for r in rows if r.get("event") == "log"]


def test_nodes_with_fake_hpus_one_seen_by_rays_own_detection(ray_cluster: RayTestCluster) -> None:
    nodes = ray_nodes.list_nodes(ray_cluster.address)
    assert [n.alive for n in nodes] == [True, True]
    head, worker = nodes
    assert head.head and not worker.head
    assert (head.hpu_total, worker.hpu_total) == (2.0, 2.0)
    raw = {n["node_id"]: n for n in ray_cluster.nodes()}
    # The worker node was started without --resources: its HPUs come from Ray's detection
    # through habana_frameworks (the fake on its PYTHONPATH), which also names the card type.
    assert any(k.startswith("accelerator_type:Intel-GAUDI2") for k in raw[worker.node_id]["resources_total"])
    table = ray_nodes.format_nodes(nodes)
    assert "alive" in table and "2/2" in table and worker.node_id[:8] in table


def test_validation_says_why_before_anything_starts(ray_cluster: RayTestCluster) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(control.InvalidSpec) as exc:
        control.submit(ray_spec(ray_cluster, ray_address=nowhere), CPU)
    assert "cannot reach the Ray cluster at " + nowhere in str(exc.value)
    assert "ssh -L 8265" in str(exc.value)
    assert runfolder.all_runs() == []

    def problems(**changes: object) -> str:
        _, found = checks.check(ray_spec(ray_cluster, **changes))
        return "\n".join(str(p) for p in found)

    # an earlier test's workers give their CPUs back a moment after their job ended: an idle cluster
    # (the state this means) has no problems
    wait(lambda: problems() == "", 60, "the cluster's CPUs to be free")
    too_many = problems(device="hpu", workers=4)
    assert "4 HPUs on one host needed" in too_many and re.search(r"\(\w{8}\) 2/2, .*\(\w{8}\) 2/2", too_many)
    assert "1, 2, 4 or 8 cards" in problems(device="hpu", workers=3)
    assert "whole hosts of 8 cards" in problems(device="hpu", workers=12)
    assert "3 free CPUs" in problems(workers=3)
    assert problems(device="hpu", workers=2) == ""


async def launch_from_the_form(cluster: RayTestCluster) -> RunFolder:
    """What a user does: n, target ray, the address, ctrl+r to see the nodes, the small demo, ctrl+s."""
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("4", "n")
        form = app.screen
        assert isinstance(form, JobFormScreen)
        form.query_one("#f-ray_address", Input).value = cluster.address
        form.query_one("#f-target", Select).value = "ray"
        form.query_one("#f-device", Select).value = "cpu"
        values = {"workers": "2", "max_seq_len": "64", "batch_size": "8", "max_steps": "20"}
        values |= {"warmup_steps": "2", "logging_steps": "1", "env": f"PYTHONPATH={ROOT}"}
        for name, value in values.items():
            form.query_one(f"#f-{name}", Input).value = value
        await pilot.press("ctrl+r")
        nodes = form.query_one("#form-cluster", Static)
        for _ in range(100):
            if str(nodes.render()).count(" alive ") == 2:
                break
            await pilot.pause(0.1)
        assert str(nodes.render()).count(" alive ") == 2 and "2/2" in str(nodes.render())
        await pilot.press("ctrl+s")
        for _ in range(300):
            if isinstance(app.screen, TrainingScreen):
                break
            await pilot.pause(0.1)
        screen = app.screen
        assert isinstance(screen, TrainingScreen), str(form.query_one("#form-problems", Static).render())
        # the new job is selected once the list's poll has drawn its row
        await settle(pilot, lambda: screen.selected is not None, 30, "the new job's row selected")
        assert screen.selected is not None
        return runfolder.find(screen.selected)


@pytest.mark.slow
async def test_two_workers_one_per_node_loss_falls_and_metrics_arrive(ray_cluster: RayTestCluster) -> None:
    run = await launch_from_the_form(ray_cluster)
    assert run.spec().target == "ray" and run.spec().workers == 2
    assert wait_done(run) == "succeeded", run.status()
    steps = log_steps(run)
    assert steps == sorted(set(steps)) and steps[-1] == 20
    metrics = MetricsReader(run.metrics_path)
    metrics.poll()
    losses = [p.loss for p in metrics.points if p.loss is not None]
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3
    assert metrics.world_size == 2 and metrics.ended is not None
    record = ray_record.read_record(run)
    assert record is not None and record.submission_id == f"gaudi-tui-{run.id}-a1"
    assert len(record.nodes()) == 2  # one worker per node
    assert "GAUDI_TUI_METRIC" not in run.log_path.read_text()
    assert (run.model_dir / "model.safetensors").is_file()
    watcher = RunWatcher(run)
    watcher.poll()
    view = watcher.view(time.time())
    assert view.target == "ray" and record.submission_id in view.where


@pytest.fixture(scope="module")
def stopped_run(ray_cluster: RayTestCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunFolder]:
    """A two-worker job the panel stopped after its third step, in a home of its own: the stop test
    checks how it ended, the resume test resumes it (a Ray Train start of two workers costs 20-40 s
    here: one start for the two tests, each under a minute). Killed at the end if a test left it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GAUDI_TUI_HOME", str(tmp_path_factory.mktemp("stopped-home")))
        for name in USER_SETTINGS:  # as tests/conftest.py's gaudi_home: never the user's runs folder
            patch.delenv(name, raising=False)
        patch.setenv("HF_HUB_OFFLINE", "1")
        run = submit_when_free(ray_spec(ray_cluster, max_steps=400))
        try:
            wait(lambda: len(log_steps(run)) >= 3, 120, "the first metrics", run)
            control.stop(run)
            wait_done(run)
            yield run
        finally:
            if state_of(run) not in TERMINAL:
                control.kill(run)
                wait_done(run, 120)


@pytest.mark.slow
def test_a_stop_ends_both_ranks_at_one_step_with_its_checkpoint(stopped_run: RunFolder) -> None:
    run = stopped_run
    assert state_of(run) == "stopped", run.status()
    stops = re.findall(r"rank (\d) stopping at step (\d+)", run.log_path.read_text())
    assert {r for r, _ in stops} == {"0", "1"} and len({s for _, s in stops}) == 1  # same step
    step = int(stops[0][1])
    assert [runfolder.checkpoint_step(c) for c in run.checkpoints()] == [step]
    assert run.newest_complete_checkpoint() is not None


@pytest.mark.slow
def test_a_stopped_job_resumes_from_the_step_both_ranks_stopped_at(stopped_run: RunFolder) -> None:
    run = stopped_run
    step = runfolder.checkpoint_step(run.newest_complete_checkpoint())  # type: ignore[arg-type]
    assert control.resume(run).startswith(f"resuming from checkpoint-{step}")
    wait(lambda: any(s > step for s in log_steps(run)), 120, "steps after the checkpoint", run)
    begins = [json.loads(x) for x in run.metrics_path.read_text().splitlines() if '"begin"' in x]
    assert begins[-1]["step"] == step  # continued from the checkpoint
    control.kill(run)
    assert wait_done(run, 120) == "cancelled"


@pytest.mark.slow
def test_a_killed_supervisor_reattaches_mirrors_without_duplicates_then_kill(
    ray_cluster: RayTestCluster,
) -> None:
    run = submit_when_free(ray_spec(ray_cluster, max_steps=400))
    wait(lambda: len(log_steps(run)) >= 3, 120, "the first metrics", run)
    status = run.status()
    assert status is not None and status.supervisor is not None
    os.kill(status.supervisor.pid, signal.SIGKILL)
    wait(lambda: state_of(run) == "lost", 10, "the job to show as lost")
    assert control.resume(run) == f"re-attached: Ray job gaudi-tui-{run.id}-a1 is RUNNING on the cluster"
    wait(lambda: state_of(run) == "running", 30, "the new supervisor")
    before = len(log_steps(run))
    wait(lambda: len(log_steps(run)) > before + 2, 60, "mirroring to resume", run)
    steps = log_steps(run)
    assert steps == sorted(steps) and len(steps) == len(set(steps))  # the re-attach duplicated nothing

    control.kill(run)
    assert wait_done(run, 120) == "cancelled"
    final = run.status()
    assert final is not None and final.error == "killed on the cluster"
    assert cluster.job_state(run) == "STOPPED"


@pytest.mark.slow
def test_a_node_lost_mid_job_fails_naming_the_node(ray_cluster: RayTestCluster) -> None:
    run = submit_when_free(ray_spec(ray_cluster, max_steps=2000, save_steps=5))
    wait(lambda: checkpoint_and_ranks(run), 150, "a first checkpoint and both ranks' nodes", run)
    record = ray_record.read_record(run)
    assert record is not None and len(record.nodes()) == 2
    nodes = {n.node_id: n for n in ray_nodes.list_nodes(ray_cluster.address)}
    lost = next(nodes[i] for i in record.nodes() if not nodes[i].head)
    ray_cluster.kill_node(ray_cluster.marks[1])
    assert wait_done(run, 120) == "failed"
    status = run.status()
    assert status is not None and status.error is not None
    assert f"node {lost.label} died mid-job" in status.error
    assert run.newest_complete_checkpoint() is not None  # resumable


def checkpoint_and_ranks(run: RunFolder) -> bool:
    metrics = MetricsReader(run.metrics_path)
    metrics.poll()
    record = ray_record.read_record(run)
    return metrics.last_checkpoint is not None and record is not None and len(record.ranks) == 2


def test_record_round_trip(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    record = ray_record.ClusterRecord(
        "http://h:8265", "sid", 2, ranks={"0": {"node_id": "n0", "node_ip": "1"}}
    )
    ray_record.write_record(run, record)
    assert ray_record.read_record(run) == record
    assert record.nodes() == ["n0"]
