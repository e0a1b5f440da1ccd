"""A queue answer's jobs decoded only when read (core/slurm/queue_fields.AnswerJobs): 10,000 jobs are
ordered, filtered and counted by each job's brief (id, user, state), and only the jobs a screen
shows or a supervisor asks for are decoded. Read from the real 22.05.8 answer squeue_fields.txt."""

from __future__ import annotations

from pathlib import Path

from gaudi_tui.core.slurm import poll, queue_fields, table
from gaudi_tui.core.slurm.model import QueueJob
from gaudi_tui.core.slurm.queue_jobs import QueueJobs

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
SEP = "|5eb2a0c4d19f7e38|"
"""The separator squeue_fields.txt was printed with."""


def recorded(sep: str = SEP) -> str:
    return (DATA / "squeue_fields.txt").read_text().replace(SEP, sep)


def test_each_brief_is_what_its_job_says_and_only_read_jobs_are_decoded() -> None:
    queue_fields._LAST.clear()
    jobs = queue_fields.jobs(recorded(), SEP)
    assert len(jobs) == 19 and len(queue_fields._LAST) == 1  # the first job: the answer's layout
    assert jobs[7].job_id == 18 and len(queue_fields._LAST) == 2
    assert jobs.job(14) is not None and len(queue_fields._LAST) == 3  # a supervisor's own job
    decoded = list(jobs)
    assert list(jobs.briefs()) == [(j.job_id, j.user, j.state) for j in decoded]
    assert jobs == QueueJobs(decoded) and all(a is b for a, b in zip(jobs, decoded, strict=True))


def test_the_screen_order_is_every_active_job_then_the_ended_ones_by_id() -> None:
    sep = queue_fields.separator()
    jobs = queue_fields.jobs(recorded(sep), sep)
    for user in ("root", None, "nobody"):
        listed = list(jobs) if user is None else table.mine(jobs, user)
        expected = sorted(listed, key=lambda j: (not j.active, j.job_id))
        assert [jobs[i] for i in table.order(jobs, user)] == expected
    assert table.order(jobs, "nobody") == [] and len(table.order(jobs, None)) == 19


def test_a_job_whose_values_cannot_be_read_is_shown_with_why_and_the_others_read() -> None:
    """The first job's values say how this squeue prints them; a later job with a value this code
    does not read (an exit code as `0:15`) is listed with its id, user and state and why."""
    sep = queue_fields.separator()
    lines = recorded(sep).split(f"{sep}\n")
    values = lines[3].split(sep)
    values[queue_fields.KEYS.index("exit_code")] = "0:15"
    lines[3] = sep.join(values)
    jobs = queue_fields.jobs(f"{sep}\n".join(lines), sep)
    odd = jobs[3]
    assert (odd.job_id, odd.user, odd.state) == jobs.briefs()[3] and "exit_code" in odd.reason
    assert "cannot read" in odd.reason and odd.name == ""
    assert all(
        isinstance(j, QueueJob) and "cannot read" not in j.reason for i, j in enumerate(jobs) if i != 3
    )


def test_a_snapshot_finds_a_job_by_id_without_decoding_the_others() -> None:
    queue_fields._LAST.clear()
    answer = queue_fields.Answer(recorded(), SEP)
    snap = poll.Snapshot(1.0, answer.jobs(), answer=answer)
    job = snap.job(13)
    assert job is not None and job.stdout_path() == "/tmp/slq/rel-scr.out"
    assert set(queue_fields._LAST) == {"1", "13"}  # the first job (the layout) and this one
    assert snap.job(99999) is None
    assert poll.Snapshot(1.0, tuple(snap.jobs)).jobs == snap.jobs  # a tuple given is held as QueueJobs


def test_the_shared_file_reads_back_the_answer_whole(tmp_path: Path) -> None:
    """The file as the poll writes it (orjson: names in any script, raw; not json.dumps' escapes)."""
    answer = queue_fields.Answer(recorded(), SEP)
    snap = poll.Snapshot(1.0, answer.jobs(), answer=answer)
    path = tmp_path / "queue.json"
    path.write_bytes(snap.file_bytes())
    back = poll._read(path)
    assert back is not None and back.answer == answer and back.jobs == snap.jobs
    assert "日本".encode() in path.read_bytes()  # a name's own characters, as UTF-8


def test_a_value_that_starts_with_a_newline_does_not_split_its_job() -> None:
    """A job's pieces are cut where S and a newline meet, which also happens inside a job whose
    name (anyone's) or path starts with a newline: its pieces are joined again, the job read whole,
    and the answer is not refused (a refusal would put the cluster on `squeue --json` for good)."""
    sep = queue_fields.separator()
    lines = recorded(sep).split(f"{sep}\n")
    values = lines[3].split(sep)
    values[queue_fields.KEYS.index("name")] = "\nstarts with a newline"
    values[queue_fields.KEYS.index("dependency")] = "\n"
    lines[3] = sep.join(values)
    text = f"{sep}\n".join(lines)
    jobs = queue_fields.jobs(text, sep)
    queue_fields._LAST.clear()
    assert len(jobs) == 19 and jobs[3].name == "\nstarts with a newline" and jobs[3].dependency == "\n"
    assert jobs.briefs()[3] == (jobs[3].job_id, "root", jobs[3].state)
    assert [j.job_id for j in jobs] == [int(line.split(sep, 1)[0]) for line in lines[:-1]]
