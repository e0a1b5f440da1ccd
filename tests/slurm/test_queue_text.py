"""`squeue --json` read job by job (core/slurm/queue_text.py): the same jobs as a whole decode of
every real 22.05.8 answer, unchanged jobs not decoded again, errors as before."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from gaudi_tui.core.slurm import model, queue_text
from gaudi_tui.core.slurm.cli import SlurmError

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
ANSWERS = sorted(p.name for p in DATA.glob("squeue*.json") if "ctld_down" not in p.name)


@pytest.mark.parametrize("name", ANSWERS)
def test_every_real_answer_reads_as_a_whole_decode(name: str) -> None:
    text = (DATA / name).read_text()
    assert queue_text.split(text) is not None  # laid out as 22.05 prints it
    assert queue_text.jobs_from_text(text) == model.jobs_from_json(json.loads(text))


def test_only_the_changed_job_is_decoded_again() -> None:
    data = json.loads((DATA / "squeue_all.json").read_text())
    first = queue_text.jobs_from_text(json.dumps(data, indent=2))
    data["jobs"][6]["state_reason"] = "Priority"
    again = queue_text.jobs_from_text(json.dumps(data, indent=2))
    assert again[6].reason == "Priority" and again[6] is not first[6]
    assert all(a is b for i, (a, b) in enumerate(zip(first, again, strict=True)) if i != 6)


def test_a_scheduling_pass_that_changed_nothing_shown_decodes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every job's `last_sched_evaluation` is new at each pass; the screen does not read it."""
    assert not set(queue_text.UNREAD_CHURN) & set(model.READ)
    data = json.loads((DATA / "squeue_all.json").read_text())
    queue_text.jobs_from_text(json.dumps(data, indent=2))
    for row in data["jobs"]:
        row["last_sched_evaluation"] += 60
    data["jobs"][2]["state_reason"] = "Dependency"
    decoded: list[str] = []
    loads = queue_text.loads  # the untrusted reader every decode goes through
    monkeypatch.setattr(queue_text, "loads", lambda text: decoded.append(text) or loads(text))
    again = queue_text.jobs_from_text(json.dumps(data, indent=2))
    monkeypatch.undo()
    assert again == model.jobs_from_json(data) and again[2].reason == "Dependency"
    assert not any('"job_id"' in text for text in decoded)  # no job decoded whole
    assert sum('"Dependency"' in text for text in decoded) == 1  # job 2's changed line alone


def test_every_shown_field_new_at_each_answer_is_read_from_its_own_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worst case of bench/slurm_queue.py: every job's state reason new at every answer."""
    data = json.loads((DATA / "squeue_all.json").read_text())
    queue_text.jobs_from_text(json.dumps(data, indent=2))
    decoded: list[str] = []
    loads = queue_text.loads
    for tick in range(3):
        decoded.clear()
        for row in data["jobs"]:
            row["state_reason"] = f'Priority ({tick}, "x": [y],'  # a value that looks like structure
        monkeypatch.setattr(queue_text, "loads", lambda text: decoded.append(text) or loads(text))
        again = queue_text.jobs_from_text(json.dumps(data, indent=2))
        monkeypatch.undo()
        assert again == model.jobs_from_json(data)
        assert {j.reason for j in again} == {f'Priority ({tick}, "x": [y],'}
        assert not any('"job_id"' in text for text in decoded)


def test_a_job_whose_layout_or_id_changed_is_decoded_whole() -> None:
    data = json.loads((DATA / "squeue_all.json").read_text())
    queue_text.jobs_from_text(json.dumps(data, indent=2))
    running = next(i for i, r in enumerate(data["jobs"]) if r["gres_detail"])
    data["jobs"][running]["gres_detail"] = ["gpu:gaudi2:8(IDX:0-7)", "gpu:gaudi2:8(IDX:0-7)"]
    data["jobs"][running]["nodes"] = "n[1-2]"
    data["jobs"][0] = {**data["jobs"][0], "job_id": 99, "name": "new"}  # a new job in the old one's place
    data["jobs"][1]["flags"] = ["A", "B"]  # a nested line only (not read)
    data["jobs"][2]["gres_detail"] = []  # a list that was already empty: unchanged
    again = queue_text.jobs_from_text(json.dumps(data, indent=2))
    assert again == model.jobs_from_json(data)
    assert again[running].cards_by_node == {"n1": tuple(range(8)), "n2": tuple(range(8))}
    assert again[0].job_id == 99 and again[0].name == "new"


def test_random_changes_read_as_a_whole_decode() -> None:
    """Answers after answers, each with random jobs' random fields changed (read or not, one-line
    or nested, values with commas, quotes and brackets): always what a whole decode gives."""
    rng = random.Random(28)
    data = json.loads((DATA / "squeue_all.json").read_text())
    keys = sorted({key for row in data["jobs"] for key in row} - {"job_id"})
    values = [0, 7, None, True, "", "a,b", 'q"x', "[1]", "{", ["n1"], {"k": [1, 2]}, "gpu:gaudi2:2(IDX:0-1)"]
    read = 0
    for _ in range(150):
        before = json.dumps(data)
        for row in rng.sample(data["jobs"], rng.randint(0, len(data["jobs"]))):
            for key in rng.sample(keys, rng.randint(1, 3)):
                row[key] = rng.choice(values)
            row["job_id"] = rng.choice([row["job_id"], row["job_id"], rng.randint(1, 50)])
        text = json.dumps(data, indent=2)
        try:
            expected = model.jobs_from_json(json.loads(text))
        except (TypeError, ValueError, AttributeError):
            data = json.loads(before)  # a value model.py itself cannot read: not this module's case
            continue
        read += 1
        assert queue_text.jobs_from_text(text) == expected
    assert read > 100


def test_another_layout_is_decoded_whole() -> None:
    data = json.loads((DATA / "squeue_all.json").read_text())
    compact = json.dumps(data)
    assert queue_text.split(compact) is None
    assert queue_text.jobs_from_text(compact) == model.jobs_from_json(data)


def test_a_controller_that_did_not_answer_and_garbage_are_errors() -> None:
    with pytest.raises(SlurmError) as down:
        queue_text.jobs_from_text((DATA / "squeue_json_ctld_down.json").read_text())
    assert down.value.kind == "controller" and "did not answer" in str(down.value)
    broken = (DATA / "squeue_all.json").read_text().replace('"job_id": 4,', '"job_id": 4,,', 1)
    with pytest.raises(SlurmError) as garbage:
        queue_text.jobs_from_text(broken)
    assert garbage.value.kind == "refused" and "not JSON" in str(garbage.value)
