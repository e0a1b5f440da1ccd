"""Gaudi insight of a Ray job: the runtime's metrics file stays on the node, so the panel has only
what rank 0's callback puts into its log events (through the job's log stream). A user's Trainer
script on the demo model under the fake Gaudi runtime (tests/fakes/hpu_runtime, made from Intel's
saver), on the loopback two-node cluster."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gaudi_tui.core.demo import model_dir
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from gaudi_tui.core.jobs.runfolder import RunFolder
from tests.conftest import PYTHON
from tests.insight.test_fake_runtime_runs import FAKE_RUNTIME, SCRIPT, STEPS, compile_findings
from tests.jobs.conftest import events, log_tail
from tests.ray.cluster import ROOT, RayTestCluster
from tests.ray.test_ray_commands import command_spec
from tests.ray.test_ray_jobs import submit_when_free, wait_done


@pytest.mark.slow
def test_compiles_reach_the_panel_through_the_log_stream(ray_cluster: RayTestCluster, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "lengths.py").write_text(SCRIPT, encoding="utf-8")
    storage = tmp_path / "cluster-storage"
    spec = command_spec(
        ray_cluster, storage, project, [PYTHON, "lengths.py", "--model", str(model_dir()), "--max_steps", str(STEPS)],
        env={"PYTHONPATH": os.pathsep.join((str(FAKE_RUNTIME), str(ROOT))), "FAKE_HPU_RUNTIME": "1",
             # relative: written in the job's folder on the cluster, never in the panel's run folder
             "PT_HPU_METRICS_FILE": "hpu_metrics.json", "PT_HPU_METRICS_DUMP_TRIGGERS": "process_exit,metric_change"},
    )  # fmt: skip
    run = submit_when_free(spec)
    assert wait_done(run, 240) == "succeeded", log_tail(run)
    assert (RunFolder(storage / run.id).path / "work" / "hpu_metrics.json").is_file()  # on the cluster
    assert events(run, "log")[-1]["graph_compilations"] == STEPS
    watcher = InsightWatcher(run)
    watcher.poll(catch_up=True)
    insight = watcher.insight()
    assert not insight.files_found and insight.graphs_by_rank[0][-1] == STEPS
    assert [f.id for f in compile_findings(insight)] == ["recompiling"]
