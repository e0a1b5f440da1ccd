"""`squeue --json` read job by job (core/slurm/queue_text.py): the same jobs as a whole decode of
every real 22.05.8 answer, unchanged jobs not decoded again, errors as before."""

from __future__ import annotations

import json
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
    assert not set(queue_text.UNREAD_CHURN) & set(model._READ)  # noqa: SLF001 - the fields read
    data = json.loads((DATA / "squeue_all.json").read_text())
    queue_text.jobs_from_text(json.dumps(data, indent=2))
    for row in data["jobs"]:
        row["last_sched_evaluation"] += 60
    data["jobs"][2]["state_reason"] = "Dependency"
    decoded: list[str] = []
    loads = json.loads
    monkeypatch.setattr(json, "loads", lambda text: decoded.append(text) or loads(text))
    again = queue_text.jobs_from_text(json.dumps(data, indent=2))
    monkeypatch.undo()
    assert again == model.jobs_from_json(data) and again[2].reason == "Dependency"
    assert sum(text.count('"job_id"') for text in decoded) == 1  # job 2 alone


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
