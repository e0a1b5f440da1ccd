"""The queue poll's `squeue` in its text form: only the fields the poll's users read, decoded into
the QueueJob that `squeue --json`'s record of the same job gives (model.job_from_json).

With 1,000 jobs `squeue --json` prints ~2.6 MB, and reading it is most of a refresh's cost; these
fields are ~0.5 MB (a third of it separators). The call (22.05.8, tests/data/slurm/squeue_fields.txt):

    SLURM_TIME_FORMAT=%s squeue --all --states=all --noheader --Format=JobID:0S,...,Dependency:0S

`:0` prints a field whole (no padding, never cut) and S, the separator, follows every field. S is
`|<16 hex digits>|`, drawn anew (`secrets`) for every call. Slurm prints a job's name, paths and
command raw: a user may put newlines and `|` in a job name, so that a line of their own could look
like another job (even another user's), but not a separator they cannot know. Splitting the
answer at S is then exact: FIELDS values a job, each job's first one after the newline that ends
the last. `--states=all` lists ended jobs too (JSON lists them); SLURM_TIME_FORMAT=%s makes times
epoch seconds (glibc's strftime).

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

import operator
import secrets
from dataclasses import dataclass
from typing import Any

from gaudi_tui.core.slurm.cli import Slurm, SlurmError, conf_key
from gaudi_tui.core.slurm.model import QueueJob, job_from_json
from gaudi_tui.core.slurm.queue_text import jobs_from_text

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

Known = dict[tuple[str, ...], QueueJob]
_PARSED: Known = {}
"""Each job's values in the last answer → its QueueJob."""
_BY_ID: dict[str, tuple[tuple[str, ...], QueueJob]] = {}
"""Each job's first value in the last answer (its id) → its values and QueueJob."""
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

    def jobs(self) -> list[QueueJob]:
        """Its jobs (LayoutError, or SlurmError for JSON that is an error or not JSON)."""
        return jobs(self.text, self.sep) if self.sep else jobs_from_text(self.text)


def read(slurm: Slurm) -> tuple[Answer, list[QueueJob]]:
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


def jobs(text: str, sep: str) -> list[QueueJob]:
    """The jobs of one answer printed with `sep`: a job whose values are all as in the last answer
    is the same QueueJob; one whose changed values are all of PATCHED (a new reason, a new state),
    the last one with those; any other, decoded. LayoutError when it is not laid out as expected."""
    values = text.split(sep)
    count, rest = divmod(len(values) - 1, WIDTH)
    if rest or values[-1] not in ("\n", "") or (count == 0) != (values[-1] == ""):
        raise LayoutError(f"{len(values) - 1} values is not {WIDTH} a job")
    seen: Known = {}
    by_id: dict[str, tuple[tuple[str, ...], QueueJob]] = {}
    out = []
    for start in range(0, count * WIDTH, WIDTH):
        record = tuple(values[start : start + WIDTH])
        job = _PARSED.get(record)
        if job is None:
            # the last answer's job by its first value as printed (its id, after a newline but
            # for the first job): validated when it was decoded
            last = _BY_ID.get(record[0])
            job = _patched(last, record) or job_from_json(row(_job_id(record[0], start == 0), record))
            if job is None:  # _value read its id as digits: not reached
                raise LayoutError("a job without its id")
        seen[record] = job
        by_id[record[0]] = (record, job)
        out.append(job)
    _PARSED.clear()  # keep only what this answer held
    _PARSED.update(seen)
    _BY_ID.clear()
    _BY_ID.update(by_id)
    return out


def _job_id(value: str, first: bool) -> str:
    """A job's first value is its id; every job's but the first's starts with the newline that ended the last."""
    if first:
        return value
    if not value.startswith("\n"):
        raise LayoutError("a job's values do not start on a line of their own")
    return value[1:]


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
