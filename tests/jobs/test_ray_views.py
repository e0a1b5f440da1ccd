"""A recorded Ray job shows like a local one, plus where it ran (no cluster needed here)."""

from __future__ import annotations

import time

from textual.widgets import Static

from gaudi_tui.commands.jobs import format_table
from gaudi_tui.core.jobs.monitor import Monitor, RunWatcher
from gaudi_tui.core.jobs.targets.ray import record as ray_record
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.training import TrainingScreen
from tests.conftest import CPU
from tests.jobs.conftest import replay
from tests.pilot import settle


def test_a_ray_job_view_names_cluster_submission_and_nodes() -> None:
    run = replay(recorded="ray-runs")
    record = ray_record.read_record(run)
    assert record is not None
    watcher = RunWatcher(run)
    watcher.poll()
    view = watcher.view(time.time())
    assert (view.state, view.target, view.step, view.max_steps) == ("succeeded", "ray", 60, 60)
    assert view.where.startswith(f"{record.address} · {record.submission_id} (Ray job {record.ray_job_id})")
    for rank, node in record.ranks.items():
        assert f"{rank}@{node['node_ip']}/{node['node_id'][:8]}" in view.where
    assert record.submission_id in format_table(Monitor().poll())


def test_a_lost_ray_job_offers_re_attach() -> None:
    run = replay(recorded="ray-runs")
    status = run.status()
    assert status is not None
    run.write_status(status.with_(state="running", ended=None))  # its supervisor (recorded PID) is gone
    watcher = RunWatcher(run)
    watcher.poll()
    view = watcher.view(time.time())
    assert view.state == "lost" and "r re-attaches" in (view.error or "")


async def test_training_details_show_where_a_ray_job_runs() -> None:
    run = replay(recorded="ray-runs")
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4", "d")
        screen = app.screen
        assert isinstance(screen, TrainingScreen)

        def details() -> str:
            shown = screen.query("#job-details")  # the panes mount after the list
            return str(shown.first(Static).render()) if shown else ""

        await settle(pilot, lambda: "nodes when the job ended" in details(), 30, "the job's details")
        record = ray_record.read_record(run)
        assert record is not None
        shown = details()
        assert f"where    {record.address} · {record.submission_id}" in shown
        # The recorded cluster is gone: the nodes as they were when the job ended, said so.
        assert "nodes when the job ended (the cluster does not answer now)" in shown
        for node in record.nodes_seen:
            assert f"{node['ip']} ({node['node_id'][:8]})" in shown
        assert shown.count(" alive ") == 2 and "2/2" in shown
        assert "target               ray" in shown and "workers              2" in shown


async def test_r_on_a_finished_ray_job_says_why_it_cannot_resume() -> None:
    run = replay(recorded="ray-runs")
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await pilot.press("4")
        screen = app.screen
        await settle(
            pilot, lambda: isinstance(screen, TrainingScreen) and screen.selected == run.id, 30, "the job"
        )
        await pilot.press("r")
        said = lambda: any("already finished" in n.message for n in app._notifications)  # noqa: E731, SLF001
        await settle(pilot, said, 30, "the refusal")
        assert any(f"{run.id} already finished" in n.message for n in app._notifications)  # noqa: SLF001
