"""The fake Gaudi runtime on the loopback Slurm cluster (tests/slurm/cluster.py): a user's Trainer
script as a command job, one srun task per card on two nodes; every rank writes its own
`-rank<N>` file into the shared folder and the panel reads both."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gaudi_tui.core.demo import model_dir
from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from gaudi_tui.core.jobs.spec import from_mapping
from tests.conftest import ROOT
from tests.insight.test_fake_runtime_runs import FAKE_RUNTIME, SCRIPT, STEPS, compile_findings
from tests.jobs.conftest import log_tail, wait_done
from tests.slurm.cluster import SlurmTestCluster
from tests.slurm.conftest import nothing_outlives_the_test  # noqa: F401 - the autouse guard
from tests.slurm.test_slurm_jobs import CPU


@pytest.mark.slow
def test_every_rank_on_every_node_writes_its_file_and_both_are_read(
    slurm: SlurmTestCluster,
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "lengths.py").write_text(SCRIPT, encoding="utf-8")
    metrics = tmp_path / "hpu" / "hpu_metrics.json"
    spec = from_mapping({
        "kind": "command", "command": ["lengths.py", "--model", str(model_dir()), "--max_steps", str(STEPS)],
        "command_launcher": "torchrun", "workdir": str(project), "device": "cpu", "target": "slurm",
        "slurm_nodes": 2, "slurm_cards_per_node": 1,
        "env": {"PYTHONPATH": os.pathsep.join((str(FAKE_RUNTIME), str(ROOT))), "FAKE_HPU_RUNTIME": "1",
                "PT_HPU_METRICS_FILE": str(metrics), "PT_HPU_METRICS_DUMP_TRIGGERS": "process_exit,metric_change"},
    })  # fmt: skip
    run = control.submit(spec, CPU)
    assert wait_done(run, 300) == "succeeded", log_tail(run)
    assert sorted(p.name for p in metrics.parent.iterdir()) == [
        "hpu_metrics-rank0.json",
        "hpu_metrics-rank1.json",
    ]
    watcher = InsightWatcher(run)
    watcher.poll(catch_up=True)
    insight = watcher.insight()
    assert [(r.rank, r.graphs, r.exited) for r in insight.ranks] == [(0, STEPS, True), (1, STEPS, True)]
    assert [f.id for f in compile_findings(insight)] == ["recompiling"]
