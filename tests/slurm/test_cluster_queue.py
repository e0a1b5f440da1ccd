"""The client, the parsers, the poll's text form and `gaudi-tui slurm` against jobs submitted with
plain sbatch on the real loopback cluster."""

from __future__ import annotations

import json
import time

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.slurm import model, poll, queue_fields
from gaudi_tui.core.slurm.cli import Slurm, conf_key
from tests.slurm.cluster import SlurmTestCluster
from tests.slurm.test_queue_fields import comparable


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
    cards = {j.job_id: j for j in model.jobs_from_json(client.squeue())}[running].cards_by_node  # JSON only
    assert sorted(cards) == ["n1", "n2"] and all(len(v) == 3 for v in cards.values())
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


ODD = "odd\n999|x|root|x|RUNNING\x1f\tü 日本 %j $(id)"
"""A name with a forged line, the separator's `|`, a control character, a tab and non-ASCII."""


def test_the_polls_text_form_reads_as_squeue_json_on_the_cluster(
    slurm: SlurmTestCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = slurm.root / "out"
    running = slurm.sbatch(
        "-J", "span", "-N2", "--gres=gpu:3", "-o", f"{out}/%x-%j.out", "--wrap", "sleep 60"
    )
    failed = slurm.sbatch("-J", "fails", "-o", f"{out}/f.out", "--wrap", "exit 3")
    held = slurm.sbatch("-J", ODD, "-H", "-t", "90", "--wrap", "true")
    array = slurm.sbatch("-J", "arr", "-H", "--array=0-3%2", "--gres=gpu:gaudi2:2", "--wrap", "true")
    after = slurm.sbatch("-J", "after", f"--dependency=afterok:{held}", "-t", "10", "--wrap", "true")
    client = Slurm(env=slurm.env)

    def moment() -> tuple[dict[int, model.QueueJob], dict[int, model.QueueJob]] | None:
        """The poll's jobs and squeue --json's, when the queue did not move between them."""
        before = model.jobs_from_json(client.squeue())
        snap = poll.take(client)
        if before != model.jobs_from_json(client.squeue()) or snap.error:
            return None
        jobs = {j.job_id: j for j in snap.jobs}
        done = jobs[failed].state == "FAILED" and jobs[running].state == "RUNNING"
        return (jobs, {j.job_id: j for j in before}) if done else None

    by_text, by_json = moment() or wait_for(moment)
    assert sorted(by_text) == sorted(by_json)
    assert {running, failed, held, array, after} <= set(by_text)
    for job_id, job in by_json.items():
        assert comparable(by_text[job_id]) == comparable(job), job_id
    assert by_text[held].name == ODD and by_text[failed].exit_status == 3
    assert by_text[after].dependency == f"afterok:{held}(unfulfilled)" and by_text[after].time_limit_min == 10
    assert (
        by_text[array].array_task == "0-3%2" and by_text[running].stdout_path() == f"{out}/span-{running}.out"
    )

    # a squeue without one of these fields prints it empty (and exits 0): the poll reads the JSON
    unknown = tuple(
        ("NoSuchField", key) if key == "exit_code" else (name, key) for name, key in queue_fields.FIELDS
    )
    monkeypatch.setattr(queue_fields, "FIELDS", unknown)
    monkeypatch.setattr(queue_fields, "_JSON_ONLY", set())
    fallback = poll.take(client)
    assert fallback.error is None and conf_key(client.env) in queue_fields._JSON_ONLY
    assert {j.job_id for j in fallback.jobs} == set(by_text)
    assert {j.job_id: j for j in fallback.jobs}[running].cards_by_node  # the JSON's
