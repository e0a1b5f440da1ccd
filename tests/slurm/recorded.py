"""The Slurm screen fed from real recorded 22.05.8 outputs (tests/data/slurm): the queue of
squeue_all.json (running, pending, held, failed and cancelled jobs) and the nodes of
sinfo_json_draining_down.json (n1 draining), as of two minutes after the last start. The snapshot
test and the README screenshot both show it."""

from __future__ import annotations

import json
from pathlib import Path

from gaudi_tui.core.slurm import model, poll
from gaudi_tui.ui.screens.slurm import SlurmScreen, SlurmView

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"


def recorded_view() -> SlurmView:
    queue = json.loads((DATA / "squeue_all.json").read_text())
    nodes = json.loads((DATA / "sinfo_json_draining_down.json").read_text())
    jobs = tuple(model.jobs_from_json(queue))
    now = max(j.start_time for j in jobs) + 125.0
    return SlurmView(poll.Snapshot(now, jobs), tuple(model.nodes_from_json(nodes)), None, now)


def recorded_screen() -> SlurmScreen:
    view = recorded_view()
    return SlurmScreen(loader=lambda: view, user="root")
