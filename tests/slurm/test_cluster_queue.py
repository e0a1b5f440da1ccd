"""The client, the parsers and `gaudi-tui slurm` against jobs submitted with plain sbatch on the
real loopback cluster."""

from __future__ import annotations

import json
import time

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.slurm import model, poll
from gaudi_tui.core.slurm.cli import Slurm
from tests.slurm.cluster import SlurmTestCluster


def wait_for(check, timeout: float = 20.0):  # noqa: ANN001, ANN201 - small test helper
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s")


def test_queue_and_nodes_of_plain_sbatch_jobs(
    slurm: SlurmTestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    out = slurm.root / "out"
    running = slurm.sbatch(
        "-J", "span", "-N2", "--gres=gpu:3", "-o", f"{out}/%x-%j.out", "--wrap", "echo hello; sleep 60"
    )
    pending = slurm.sbatch("-J", "big", "-N2", "--gres=gpu:8", "--wrap", "sleep 60")
    held = slurm.sbatch("-J", "held", "-H", "--wrap", "sleep 60")
    client = Slurm(env=slurm.env)

    def settled() -> dict[int, model.QueueJob] | None:
        jobs = {j.job_id: j for j in poll.take(client).jobs}
        ok = jobs[running].state == "RUNNING" and jobs[pending].reason == "Resources"
        return jobs if ok else None

    jobs = settled() or wait_for(settled)
    span = jobs[running]
    assert span.nodes == ("n1", "n2") and span.cards_per_node == 3
    assert sorted(span.cards_by_node) == ["n1", "n2"] and all(
        len(v) == 3 for v in span.cards_by_node.values()
    )
    assert span.stdout_path() == f"{out}/span-{running}.out"
    written = out / f"span-{running}.out"  # slurmd makes it when the job starts: not yet there at first
    assert wait_for(lambda: written.is_file() and written.read_text().startswith("hello"))
    assert jobs[held].reason == "JobHeldUser"

    assert main(["slurm", "queue", "--json"]) == 0
    listed = {j["job_id"]: j for j in json.loads(capsys.readouterr().out)}
    assert listed[pending]["words"] == "pending: waiting for 2 nodes with 8 free cards each on partition main"
    assert listed[running]["nodes"] == ["n1", "n2"] and listed[running]["cards_per_node"] == 3
    assert listed[held]["words"].startswith("pending: held by its user")
    assert main(["slurm", "queue", "--user", "nobody"]) == 0
    assert str(running) not in capsys.readouterr().out

    slurm.run("scontrol", "update", "nodename=n2", "state=drain", "reason=disk check")
    assert main(["slurm", "nodes", "--json"]) == 0
    nodes = {n["name"]: n for n in json.loads(capsys.readouterr().out)}
    assert (nodes["n1"]["cards_total"], nodes["n1"]["cards_used"], nodes["n1"]["cards_free"]) == (8, 3, 5)
    assert (
        nodes["n2"]["usable"] is False
        and nodes["n2"]["reason"] == "disk check"
        and nodes["n2"]["cards_free"] == 0
    )
    assert main(["slurm", "nodes"]) == 0
    text = capsys.readouterr().out
    assert "draining" in text and "disk check" in text
