"""The poll's text form of `squeue` (core/slurm/queue_fields.py) read from a real 22.05.8 answer:
the same jobs as `squeue --json` of the same moment (squeue_fields.txt / .json), names that hold
the separator's `|`, newlines, tabs, control and non-ASCII characters or a forged job read whole,
changed jobs read as a fresh decode would, and any other layout refused (LayoutError)."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest

from gaudi_tui.core.slurm import model, poll, queue_fields, table
from gaudi_tui.core.slurm.model import QueueJob

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
SEP = "|5eb2a0c4d19f7e38|"
"""The separator squeue_fields.txt was printed with."""


def recorded() -> str:
    return (DATA / "squeue_fields.txt").read_text()


def records(text: str, sep: str = SEP) -> list[list[str]]:
    values = text.split(sep)
    width = queue_fields.WIDTH
    return [
        [v[0].lstrip("\n"), *v[1:]] for v in (values[i : i + width] for i in range(0, len(values) - 1, width))
    ]


def printed(rows: list[list[str]], sep: str) -> str:
    """An answer as squeue prints it: each value followed by the separator, each job on a line."""
    return "".join(sep.join(r) + sep + "\n" for r in rows)


def fresh(text: str, sep: str) -> list[QueueJob]:
    """A decode that remembers nothing of earlier answers."""
    queue_fields._LAST.clear()
    return queue_fields.jobs(text, sep)


def comparable(job: QueueJob) -> dict[str, object]:
    """What the text form holds as JSON does: all but each node's card indices (no text field), an
    active job's end time (JSON's estimate; NONE in text, never read while a job is active) and the
    array id of a job without an array task (0 in text; an array's cancelled pending record keeps
    its own id in JSON; read only with a task: the same label, scancel id and output path)."""
    out = dataclasses.asdict(job)
    del out["cards_by_node"]
    if job.active:
        del out["end_time"]
    if not job.array_task and job.array_job_id in (0, job.job_id):
        del out["array_job_id"]
    out["stdout"], out["label"], out["scancel"] = job.stdout_path(), job.label, table.scancel_id(job)
    return out


def test_the_text_form_reads_as_the_json_of_the_same_moment() -> None:
    by_json = {
        j.job_id: j for j in model.jobs_from_json(json.loads((DATA / "squeue_fields.json").read_text()))
    }
    by_text = {j.job_id: j for j in fresh(recorded(), SEP)}
    assert sorted(by_text) == sorted(by_json) and len(by_text) == 19
    for job_id, job in by_json.items():
        assert comparable(by_text[job_id]) == comparable(job), job_id
    states = {j.state for j in by_text.values()}
    assert {"RUNNING", "PENDING", "FAILED", "CANCELLED", "COMPLETED"} <= states  # `--states=all`
    assert by_text[6].exit_status == 3 and by_text[8].restarts == 1  # requeued once, running again
    assert (by_text[16].time_limit_min, by_text[17].time_limit_min, by_text[18].time_limit_min) == (10, 90, 1)
    assert by_text[5].node_count == 2 and by_text[5].cards_per_node == 3 and by_text[5].start_time > 0
    assert by_text[19].label == "4_2" and by_text[4].label == "4_3"  # array tasks
    assert (
        by_text[13].stdout_path() == "/tmp/slq/rel-scr.out" and by_text[13].command == "/tmp/slq/s p.sh a b"
    )


def test_odd_and_hostile_names_are_read_whole() -> None:
    """Slurm prints names raw; none of them can hold a separator it does not know."""
    jobs = {j.job_id: j for j in fresh(recorded(), SEP)}
    assert jobs[2].name == "we|ird\x1fname\tü 日本 %j"
    assert jobs[11].name == "new\nline|x"
    assert jobs[3].name == "sp aces,x" and jobs[12].name == "long" * 40
    assert jobs[15].name == "$(touch /tmp/pwned); `id`"
    assert jobs[14].name == "evil\n999|x|root|x|RUNNING" and 999 not in jobs  # a forged line is no job
    assert {j.user for j in jobs.values()} == {"root"}


def test_only_changed_jobs_are_read_again_and_as_a_fresh_decode() -> None:
    """150 answers, each with a new separator and random changes; each equals a decode that
    remembers nothing, and a job whose values are unchanged is the same object."""
    rng = random.Random(28)
    rows = records(recorded())
    changes = {
        queue_fields.KEYS.index(key): values
        for key, values in {
            "state_reason": ["Priority", "Resources", "None", "BeginTime"],
            "job_state": ["RUNNING", "PENDING", "COMPLETED", "FAILED"],
            "start_time": ["N/A", "1796187498", "1796190000"],
            "end_time": ["NONE", "N/A", "1796199999"],
            "restart_cnt": ["0", "1", "2"],
            "nodes": ["", "n1", "n[1-2]"],
            "partition": ["main", "(null)"],
            "exit_code": ["0", "768", "15"],
            "name": ["a|b", "x\ny", "plain", ""],
            "dependency": ["(null)", "afterok:1(unfulfilled)"],
            "time_limit": ["UNLIMITED", "10:00", "1-02:03:00"],
        }.items()
    }
    queue_fields.jobs(printed(rows, SEP), SEP)
    for _ in range(150):
        sep = queue_fields.separator()
        last = {j.job_id: j for j in queue_fields.jobs(printed(rows, sep), sep)}
        changed = set()
        for row in rng.sample(rows, rng.randint(0, len(rows))):
            for _ in range(rng.randint(1, 3)):
                index = rng.choice(list(changes))
                row[index] = rng.choice(changes[index])
            changed.add(int(row[0]))
        if rng.random() < 0.1:
            rows.append([str(500 + len(rows)), *rows[0][1:]])  # a new job
        sep = queue_fields.separator()
        text = printed(rows, sep)
        seen = list(queue_fields.jobs(text, sep))  # each job decoded now, before `fresh` forgets them
        assert seen == fresh(text, sep)
        remembered = queue_fields.jobs(text, sep)
        sep = queue_fields.separator()
        again = queue_fields.jobs(printed(rows, sep), sep)
        assert all(a is b for a, b in zip(remembered, again, strict=True))
        assert all(last[j.job_id] is j for j in seen if j.job_id in last and j.job_id not in changed)


def test_an_answer_laid_out_otherwise_is_refused() -> None:
    text = recorded()
    assert fresh("", SEP) == []
    bad = [
        text.replace(SEP, "|0000000000000000|"),  # another separator: one value, not 22 a job
        text[: text.index(SEP) + len(SEP)],  # cut short
        text.replace(f"{SEP}\n", SEP, 1),  # two jobs on one line
        printed([[r[0], "", *r[2:]] for r in records(text)], SEP),  # a field this squeue does not know: empty
        json.dumps({"jobs": []}),
    ]
    for answer in bad:
        with pytest.raises(queue_fields.LayoutError):
            fresh(answer, SEP)


@pytest.mark.parametrize(
    ("limit", "minutes"),
    [("365-00:00:00", 525600), ("1-02:03:00", 1563), ("1:30:00", 90), ("10:00", 10), ("1:00", 1), ("5", 5), ("UNLIMITED", None)],
)  # fmt: skip
def test_time_limits_as_squeue_prints_them(limit: str, minutes: int | None) -> None:
    assert queue_fields.minutes(limit) == minutes


@pytest.mark.parametrize("limit", ["", "a:b", "1:2:3:4", "x-1:00:00", "-1"])
def test_a_time_limit_laid_out_otherwise_is_refused(limit: str) -> None:
    with pytest.raises(queue_fields.LayoutError):
        queue_fields.minutes(limit)


@pytest.mark.parametrize(("name", "sep"), [("squeue_fields.txt", SEP), ("squeue_fields.json", "")])
def test_the_shared_file_holds_the_answer_and_reads_back_the_same_jobs(name: str, sep: str) -> None:
    """Writing 1,000 decoded jobs cost more than decoding them: the file holds what squeue printed."""
    text = (DATA / name).read_text()
    answer = queue_fields.Answer(text, sep)
    snap = poll.Snapshot(1.0, tuple(answer.jobs()), answer=answer)
    data = json.loads(json.dumps(snap.to_json()))
    assert data["answer"] == [text, sep] and "jobs" not in data
    fresh("", SEP)  # a reader that has read nothing yet
    assert poll.Snapshot.from_json(data).jobs == snap.jobs and len(snap.jobs) == 19
    with pytest.raises(ValueError, match="with the answer"):
        poll.Snapshot(1.0, snap.jobs).to_json()
    with pytest.raises(ValueError, match="without its answer"):  # not an empty queue
        poll.Snapshot.from_json({**data, "answer": None})
    failed = poll.Snapshot(1.0, error="the Slurm controller did not answer")
    assert poll.Snapshot.from_json(json.loads(json.dumps(failed.to_json()))) == failed


def test_a_row_shows_no_control_character_of_a_name() -> None:
    """`gaudi-tui slurm queue` prints rows to a terminal and the screen draws them: a newline would
    break a row, an escape sequence (anyone names their job) would drive the terminal."""
    jobs = {j.job_id: j for j in fresh(recorded(), SEP)}
    assert table.queue_row(jobs[2])[1] == "we|ird\ufffdname\ufffdü 日本 %j"
    assert table.queue_row(jobs[11])[1] == "new\ufffdline|x"
    escape = dataclasses.replace(jobs[3], name="\x1b]0;pwned\x07\x1b[2J\x9b31m", reason="a\nb")
    row = table.queue_row(escape)
    assert row[1] == "\ufffd]0;pwned\ufffd\ufffd[2J\ufffd31m" and "\n" not in "".join(row)
    text = table.text_table(table.QUEUE_COLUMNS, [table.queue_row(j) for j in jobs.values()])
    assert len(text.splitlines()) == len(jobs) + 1
