"""A command job on the real loopback cluster whose supervisor was killed: what the ranks printed
while no supervisor ran is recorded when `r` re-attaches, every value exactly once (the output is
read again from the attempt's start; the events already recorded are not written again)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.targets.slurm import record as slurm_record
from tests.commands import scripts
from tests.jobs.conftest import events, log_tail, wait_done, wait_for
from tests.slurm.cluster import SlurmTestCluster
from tests.slurm.test_slurm_commands import command_spec
from tests.slurm.test_slurm_jobs import CPU

VALUES = """import json, os, time
step = 0
def say():
    global step
    step += 1
    print(json.dumps({"step": step, "loss": round(1.0 / step, 6)}), flush=True)
while not os.path.exists("GO"):  # until the test has re-attached
    say()
    time.sleep(0.2)
for _ in range(5):
    say()
    time.sleep(0.2)
"""
"""Prints a value every 0.2 s until the file GO appears, then five more, and ends."""


def printed(run: RunFolder) -> list[tuple[int, float]]:
    """The values the rank printed, from Slurm's own output file (the panel's copy aside)."""
    rec = slurm_record.read(run)
    assert rec is not None
    out = rec.output(run)
    assert out is not None
    try:
        text = out.read_text(errors="replace")
    except FileNotFoundError:
        return []
    found = []
    for line in text.splitlines():
        if line.startswith('{"step"'):
            value = json.loads(line)
            found.append((value["step"], value["loss"]))
    return found


def test_values_printed_while_no_supervisor_ran_are_recorded_once(
    slurm: SlurmTestCluster, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    scripts.write(project, "values.py", VALUES)
    run = control.submit(command_spec(project, command=["values.py"], slurm_nodes=1), CPU)
    wait_for(lambda: len(events(run, "log")) >= 3, 90, "three values\n" + log_tail(run))
    first = run.status().supervisor  # type: ignore[union-attr]
    assert first is not None
    os.kill(first.pid, signal.SIGKILL)
    wait_for(lambda: not first.alive(), 10, "the supervisor to die")
    at_kill = len(printed(run))
    wait_for(lambda: len(printed(run)) >= at_kill + 5, 30, "values printed while no supervisor runs")
    said = control.resume(run)
    assert said.startswith("re-attached: Slurm job"), said
    (project / "GO").touch()
    assert wait_done(run, 90) == "succeeded", log_tail(run)
    values = printed(run)
    assert len(values) >= at_kill + 10
    assert [(e["step"], e["loss"]) for e in events(run, "log")] == values  # each once, in order
    assert len(events(run, "begin")) == 1 and len(events(run, "end")) == 1
    copied = [x for x in run.log_path.read_text().splitlines() if x.startswith('{"step"')]
    assert len(copied) == len(values)  # stdout.log holds the output once too
