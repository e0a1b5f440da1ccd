"""The queue poll's `squeue` in its text form: only the fields the poll's users read, decoded into
the QueueJob that `squeue --json`'s record of the same job gives (model.job_from_json).

With 1,000 jobs `squeue --json` prints ~2.6 MB, and reading it is most of a refresh's cost; these
fields are ~0.5 MB (a third of it separators). The call (22.05.8, tests/data/slurm/squeue_fields.txt):

    SLURM_TIME_FORMAT=%s squeue --all --states=all --noheader --Format=JobID:0S,...,Dependency:0S

`:0` prints a field whole (no padding, never cut) and S, the separator, follows every field. S is
`|<16 hex digits>|`, drawn anew (`secrets`) for every call. Slurm prints a job's name, paths and
command raw: a user may put newlines and `|` in a job name, so that a line of their own could look
like another job (even another user's), but not a separator they cannot know. Splitting the
answer at S is then exact: FIELDS values a job, each job's last one followed by S and a newline.
`--states=all` lists ended jobs too (JSON lists them); SLURM_TIME_FORMAT=%s makes times epoch
seconds (glibc's strftime).

A queue of 10,000 jobs is 5 MB of text, and decoding every job of every answer cost ~80 ms a
refresh. So the answer is cut into one piece a job (at S and a newline, pieces joined again where
a value starts with a newline), only each job's id, user and state are read from every answer
(`AnswerJobs.briefs`: enough to order, filter and count them), and the rest of a job when it is
first read: the rows a screen shows, the job a supervisor watches. A job read with the same values
as when it was last decoded is that QueueJob again; one whose changed values are all of PATCHED, a
patched copy.

How the text differs from the JSON record (read here as JSON reads): `N/A`, `NONE`, `n/a`, `(null)`
for an empty value; an array's id (ArrayJobID) on jobs that are not arrays (JSON: 0); a time limit
as `[D-]H:MM:SS` or UNLIMITED (JSON: minutes); STDOUT filled with Slurm's default
`<workdir>/slurm-<id>.out` when no `-o` was given (JSON: ''; for an array task the default is really
`slurm-%A_%a.out`, which QueueJob.stdout_path() then makes); an active job's end time NONE where
JSON gives an estimate (read only once a job ended); an array's id 0 on an array record without a
task (JSON: its own id there, on an array's cancelled pending record; read only with a task).
`gres_detail` (each node's card indices) has no text field: QueueJob's `cards_by_node` stays empty
here (`gaudi-tui slurm --json`, which shows it, reads the JSON).

A squeue without one of these fields (another version) prints `Invalid job format specification`
on stderr, exits 0 and prints the separator alone: every value that cannot be empty is checked, and
an answer that fails them, or a squeue that refuses these options, is read again from
`squeue --json` (queue_text.py), for that cluster from then on.
"""

from __future__ import annotations

import logging
import operator
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gaudi_tui.core.slurm.cli import Slurm, SlurmError, conf_key
from gaudi_tui.core.slurm.model import QueueJob, job_from_json
from gaudi_tui.core.slurm.queue_jobs import Brief, QueueJobs
from gaudi_tui.core.slurm.queue_text import jobs_from_text

log = logging.getLogger(__name__)

FIELDS = (
    ("JobID", "job_id"), ("ArrayJobID", "array_job_id"), ("ArrayTaskID", "array_task_string"),
    ("Name", "name"), ("UserName", "user_name"), ("State", "job_state"), ("Reason", "state_reason"),
    ("Partition", "partition"), ("NodeList", "nodes"), ("NumNodes", "node_count"),
    ("tres-per-node", "tres_per_node"), ("SubmitTime", "submit_time"), ("StartTime", "start_time"),
    ("EndTime", "end_time"), ("TimeLimit", "time_limit"), ("RestartCnt", "restart_cnt"),
    ("exit_code", "exit_code"), ("STDOUT", "standard_output"), ("WorkDir", "current_working_directory"),
    ("BatchHost", "batch_host"), ("Command", "command"), ("Dependency", "dependency"),
)  # fmt: skip
"""squeue's `--Format` field → the `squeue --json` key model.job_from_json reads it as."""
KEYS = tuple(key for _, key in FIELDS)
WIDTH = len(FIELDS)
NUMBERS = frozenset({"job_id", "array_job_id", "node_count", "restart_cnt", "exit_code", "submit_time"})
"""Values that are always a number."""
TIMES = frozenset({"start_time", "end_time"})
"""A number, or a word for none (N/A, NONE, Unknown)."""
EMPTY = {"N/A", "NONE", "n/a", "(null)", "Unknown"}
"""What squeue prints for no value."""
NEVER_EMPTY = frozenset({"job_state", "state_reason", "user_name", "partition", "time_limit", "current_working_directory", "standard_output"})  # fmt: skip
NO_LIMIT = frozenset({"UNLIMITED", "INFINITE", "NOT_SET"})
PATCHED = {
    "name": "name", "user_name": "user", "job_state": "state", "state_reason": "reason", "partition": "partition",
    "submit_time": "submit_time", "start_time": "start_time", "end_time": "end_time", "restart_cnt": "restarts",
    "dependency": "dependency",
}  # fmt: skip
"""Keys that job_from_json reads as one QueueJob field, as _value gives it (never empty or a word
for none where job_from_json would put a default in)."""

_LAST: dict[str, tuple[tuple[str, ...], QueueJob]] = {}
"""Each job decoded from an answer (by its id as printed) → its values then and its QueueJob: a job
read again with the same values is that QueueJob, with only PATCHED ones changed a patched copy.
Kept for the ids of the last answer only."""
_JSON_ONLY: set[str] = set()
"""Clusters (conf_key) whose squeue does not print this text form: read from `squeue --json`."""


class LayoutError(ValueError):
    """An answer not laid out as 22.05 prints these fields."""


def separator() -> str:
    return f"|{secrets.token_hex(8)}|"


def format_arg(sep: str) -> str:
    return ",".join(f"{name}:0{sep}" for name, _ in FIELDS)


@dataclass(frozen=True)
class Answer:
    """What squeue printed: the text form with its separator, or `squeue --json` (sep '')."""

    text: str
    sep: str = ""

    def jobs(self) -> QueueJobs:
        """Its jobs (LayoutError, or SlurmError for JSON that is an error or not JSON)."""
        return jobs(self.text, self.sep) if self.sep else QueueJobs(jobs_from_text(self.text))


def read(slurm: Slurm) -> tuple[Answer, QueueJobs]:
    """Every job the controller holds, from the text form; from `squeue --json` where this squeue
    does not print it (a SlurmError when squeue fails either way); with the answer they came from."""
    key = conf_key(slurm.env)
    if key not in _JSON_ONLY:
        sep = separator()
        try:
            answer = Answer(slurm.squeue_fields(format_arg(sep)), sep)
            return answer, answer.jobs()
        except LayoutError:
            _JSON_ONLY.add(key)
        except SlurmError as exc:
            if exc.kind != "refused":  # no answer: nothing is known, and JSON would not answer either
                raise
            _JSON_ONLY.add(key)  # it refused these options (another version)
    answer = Answer(slurm.squeue_text())
    return answer, answer.jobs()


def jobs(text: str, sep: str) -> AnswerJobs:
    """The jobs of one answer printed with `sep`, each decoded when first read (LayoutError when the
    answer is not laid out as expected: its first job is decoded here, and every job must hold
    WIDTH values, a job id, a user and a state)."""
    lines = _lines(text, sep)
    briefs = _briefs(lines, sep)
    ids = {b[0] for b in briefs}
    for gone in [key for key, (_, job) in list(_LAST.items()) if job.job_id not in ids]:
        _LAST.pop(gone, None)  # keep only what this answer holds
    out = AnswerJobs(lines, sep, briefs)
    if out:
        _decode(lines[0], sep)  # the answer's layout: a squeue that prints these fields otherwise fails here
    return out


def _lines(text: str, sep: str) -> list[str]:
    """Each job's values joined by S, in order. A job's last value ends with S and a newline, and no
    value holds S; but S and a newline also meet inside a job whose value starts with a newline (a
    name is anyone's): pieces short of WIDTH values are joined with the next until they hold them."""
    pieces = text.split(f"{sep}\n")
    if pieces.pop() != "":
        raise LayoutError("an answer that does not end with a job's last value")
    want = WIDTH - 1
    if all(piece.count(sep) == want for piece in pieces):
        return pieces
    out, held = [], None
    for piece in pieces:
        held = piece if held is None else f"{held}{sep}\n{piece}"
        count = held.count(sep)
        if count > want:
            raise LayoutError(f"a job of {count + 1} values, not {WIDTH}")
        if count == want:
            out.append(held)
            held = None
    if held is not None:
        raise LayoutError(f"a job of {held.count(sep) + 1} values, not {WIDTH}")
    return out


def _briefs(lines: list[str], sep: str) -> list[Brief]:
    """Each job's id, user and state as its QueueJob has them, from its first values only (one loop:
    it runs for every job of every answer)."""
    out = []
    for line in lines:
        job_id, _, _, _, user, state, _ = line.split(sep, 6)  # WIDTH values each (_lines)
        if not (job_id.isascii() and job_id.isdigit() and len(job_id) <= 18):
            raise LayoutError(f"job id {job_id[:40]!r}")
        if not user or not state:
            raise LayoutError("a job without its user or state")
        out.append((int(job_id), "" if user in EMPTY else user, "UNKNOWN" if state in EMPTY else state))
    return out


def _decode(line: str, sep: str) -> QueueJob:
    """One job's line → its QueueJob: the last one of this job when its values are the same, a
    patched copy when only PATCHED ones changed, else decoded (LayoutError for a value this cannot
    read)."""
    record = tuple(line.split(sep))
    last = _LAST.get(record[0])
    if last is not None and last[0] == record:
        return last[1]
    job = _patched(last, record) or job_from_json(row(record[0], record))
    if job is None:  # _brief read its id as digits: not reached
        raise LayoutError("a job without its id")
    _LAST[record[0]] = (record, job)
    return job


class AnswerJobs(QueueJobs):
    """The jobs of one text answer, each decoded when first read. A job whose values this code
    cannot read (a form the first job's did not show) is shown with its id, user and state and why."""

    def __init__(self, lines: list[str], sep: str, briefs: list[Brief]) -> None:
        super().__init__()
        self._lines, self._sep, self._briefs = lines, sep, briefs
        self._decoded: list[QueueJob | None] = [None] * len(lines)

    def __len__(self) -> int:
        return len(self._lines)

    def at(self, index: int) -> QueueJob:
        job = self._decoded[index]
        if job is None:
            try:
                job = _decode(self._lines[index], self._sep)
            except LayoutError as exc:
                job = _unread(self._briefs[index], str(exc))
            self._decoded[index] = job
        return job

    def briefs(self) -> Sequence[Brief]:
        return self._briefs


def _unread(brief: Brief, why: str) -> QueueJob:
    job_id, user, state = brief
    log.warning("squeue: job %s printed a value gaudi-tui cannot read (%s)", job_id, why)
    return QueueJob(
        job_id, "", user, state, f"gaudi-tui cannot read this job's values: {why}",
        "", (), 0, 0, None, 0, 0, 0, None,
    )  # fmt: skip


_OTHERS = operator.itemgetter(*(i for i, key in enumerate(KEYS) if key not in PATCHED))
_PATCHES = tuple((i, key, PATCHED[key]) for i, key in enumerate(KEYS) if key in PATCHED)


def _patched(last: tuple[tuple[str, ...], QueueJob] | None, record: tuple[str, ...]) -> QueueJob | None:
    """The last QueueJob of this job with its changed values, when each is one of PATCHED."""
    if last is None or _OTHERS(last[0]) != _OTHERS(record):
        return None
    was = last[0]
    changes = {attr: _value(key, record[i]) for i, key, attr in _PATCHES if record[i] != was[i]}
    job = object.__new__(QueueJob)  # a copy with those values, as __init__ would set them: __init__
    job.__dict__.update(last[1].__dict__, **changes)  # takes 3 times as long, dataclasses.replace 6
    return job


def row(job_id: str, record: tuple[str, ...]) -> dict[str, Any]:
    """One job's values → the keys and values its `squeue --json` record has (those read)."""
    out = {key: _value(key, value) for key, value in zip(KEYS, (job_id, *record[1:]), strict=True)}
    out["time_limit"] = minutes(record[KEYS.index("time_limit")])
    if not out["array_task_string"]:
        out["array_job_id"] = 0  # squeue prints the job's own id there
    if out["standard_output"] == f"{out['current_working_directory']}/slurm-{out['job_id']}.out":
        out["standard_output"] = ""  # Slurm's default, which stdout_path() makes (right for arrays too)
    return out


def _value(key: str, value: str) -> object:
    """One value as its JSON record has it (as model.job_from_json then reads it, for PATCHED)."""
    if key in NUMBERS:
        if not value.isdigit():
            raise LayoutError(f"{key} is {value[:40]!r}, not a number")
        return int(value)
    if key in TIMES:
        return int(value) if value.isdigit() else 0
    if key in NEVER_EMPTY and not value:
        raise LayoutError(f"no {key}")
    return "" if value in EMPTY and key != "name" else value


def minutes(value: str) -> int | None:
    """`[D-]H:MM:SS`, `M:SS` or `M` (as squeue prints a limit) → whole minutes; None for no limit."""
    if value in NO_LIMIT:
        return None
    days, dash, clock = value.rpartition("-")
    parts = clock.split(":")
    if len(parts) > 3 or not all(p.isdigit() for p in parts) or (dash and not days.isdigit()):
        raise LayoutError(f"time limit {value[:40]!r}")
    if len(parts) == 1:
        return int(days or 0) * 1440 + int(parts[0])
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + int(part)
    return int(days or 0) * 1440 + seconds // 60
