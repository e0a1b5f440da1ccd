"""`squeue --json` read job by job: an answer's jobs whose text is unchanged since the last answer
are not decoded again.

With 1,000 jobs the answer is ~2.6 MB and decoding all of it is most of a refresh's cost. Slurm
prints the document indented (22.05: two spaces a level), so each job of the top-level `jobs`
list starts and ends on a line of its own at four spaces, and no JSON string can hold a raw
newline: splitting the text there is exact. Each job's text is the key of its parsed `QueueJob`
(and of the fields model.py reads). A changed job whose last text (by `job_id`) differs only in
its own one-line fields (`      "key": value,` at six spaces: a new state reason, a start time)
is read from those lines alone, laid over its last fields; any other changed job (a new one, a
list that grew) is decoded whole. All those lines go through one `json.loads`, all those jobs
through one more, and each changed job through `model.job_from_json` once (not compared field by
field again). The rest of the document (`meta`, `errors`) is decoded as before. An answer laid out
otherwise (another version, another indent) is decoded whole, as `Slurm.json` does.

A job's text changes at every scheduling pass even when nothing shown changed: the controller
rewrites `last_sched_evaluation` of each pending job. That field is not read (model.READ), so its
line is cut from the answer before the jobs are compared: a pass that only re-evaluated the queue
decodes nothing.
"""

from __future__ import annotations

import re
from typing import Any

from gaudi_tui.core.slurm.cli import SlurmError, answered
from gaudi_tui.core.slurm.model import READ, QueueJob, job_from_json, jobs_from_json
from gaudi_tui.core.untrusted.data import loads

JOBS = '\n  "jobs": ['
FIRST = "\n    {\n"
BETWEEN = "\n    },\n    {\n"
LAST = "\n    }\n  ]"
WHAT = "the queue"
UNREAD_CHURN = ("last_sched_evaluation",)
"""Fields of a job that change without a change the screen shows, and that model.py does not read."""
_CHURN = re.compile(r'\n      "(?:' + "|".join(UNREAD_CHURN) + r')": [0-9]+,(?=\n)')
"""Their lines at a job's field indent (6 spaces), not the last field of a job (no comma)."""

FIELD = '      "'
JOB_ID = '\n      "job_id": '
"""How a job's own field starts in its text (deeper fields are indented further)."""
MAX_FIELDS = 8
"""A changed job with more changed fields than this is decoded whole."""
_READ = frozenset(READ)

Known = tuple[dict[str, Any], QueueJob | None]
_PARSED: dict[str, Known] = {}
"""Each job's text in the last answer → the fields model.py reads, and its QueueJob."""
_TEXT_OF: dict[int, str] = {}
"""Each job's id in the last answer → its text."""


def split(text: str) -> tuple[str, list[str]] | None:
    """(the document with an empty `jobs` list, each job's text between its braces), or None when
    the answer is not laid out as 22.05 prints it."""
    start = text.find(JOBS)
    if start < 0:
        return None
    after = start + len(JOBS)
    if text.startswith("\n  ]", after):
        return text, []
    end = text.find(LAST, after)
    if end < 0 or not text.startswith(FIRST, after):
        return None
    head = text[:start] + JOBS + "]" + text[end + len(LAST) :]
    return head, text[after + len(FIRST) : end].split(BETWEEN)


def jobs_from_text(text: str) -> list[QueueJob]:
    """Every job of an answer of `squeue --json` (a SlurmError when it is an error or not JSON)."""
    parts = split(_CHURN.sub("", text))
    try:
        if parts is None:
            return jobs_from_json(answered(loads(text), "squeue", WHAT))
        answered(loads(parts[0]), "squeue", WHAT)
        out = _jobs(parts[1])
    except ValueError:
        raise SlurmError("`squeue --json` printed something that is not JSON", "refused") from None
    return out


def _jobs(parts: list[str]) -> list[QueueJob]:
    """The jobs of these texts: an unchanged text's job as it was; a job whose own one-line fields
    alone changed since the last answer, from its last fields and those lines; any other, decoded
    whole. One decode for all the lines and one for all the whole jobs."""
    known: list[Known | None] = [_PARSED.get(part) for part in parts]
    whole: list[int] = []
    patched: list[tuple[int, Known, list[str]]] = []
    for index, part in enumerate(parts):
        if known[index] is not None:
            continue
        text = _TEXT_OF.get(_job_id(part), "")
        last = _PARSED.get(text)
        lines = _changed_lines(text, part) if last is not None else None
        if last is None or lines is None:
            whole.append(index)
        else:
            patched.append((index, last, lines))
    rows: dict[int, dict[str, Any]] = {}
    if patched:
        try:
            changes = _objects(loads("[{" + "},{".join(",".join(lines) for _, _, lines in patched) + "}]"))
        except ValueError:  # a line this did not foresee: those jobs are decoded whole
            whole += [index for index, _, _ in patched]
            patched, changes = [], []
        for (index, last, _), change in zip(patched, changes, strict=True):
            read = {key: value for key, value in change.items() if key in _READ}
            if read:
                rows[index] = {**last[0], **read}
            else:
                known[index] = last  # only fields model.py does not read changed
    if whole:
        decoded = _objects(loads("[{" + "},{".join(parts[i] for i in whole) + "}]"))  # one decode for all
        for index, row in zip(whole, decoded, strict=True):
            rows[index] = {key: row[key] for key in READ if key in row}
    for index, row in rows.items():
        known[index] = (row, job_from_json(row))  # their fields changed: not compared again
    done = [item for item in known if item is not None]
    _PARSED.clear()  # keep only what this answer held
    _PARSED.update(zip(parts, done, strict=True))
    _TEXT_OF.clear()
    _TEXT_OF.update((job.job_id, part) for part, (_, job) in zip(parts, done, strict=True) if job)
    return [job for _, job in done if job]


def _job_id(part: str) -> int:
    """The `job_id` a job's text gives (0 when it gives none this can read)."""
    start = part.find(JOB_ID)
    if start < 0:
        return 0
    value = part[start + len(JOB_ID) : part.find(",", start)]
    return int(value) if value.isdigit() else 0


def _changed_lines(last: str, part: str) -> list[str] | None:
    """The job's own one-line fields (`      "key": value`, comma cut) that differ between its last
    text and this one; None when anything else differs (a nested line, a field's name, a line more
    or less, a value that opens a list) or more than MAX_FIELDS do. Each difference is found by
    halving (not char by char), and the rest after its line compared at once."""
    lines: list[str] = []
    a, b = 0, 0  # where the rest of each begins, at a line's start; all before is the same
    while len(last) - a != len(part) - b or not last.endswith(part[b:]):
        if len(lines) == MAX_FIELDS:
            return None
        start = part.rfind("\n", b, b + _common(last, part, a, b)) + 1 or b
        a, b = a + start - b, start
        old, new = last[a : _line_end(last, a)], part[b : _line_end(part, b)]
        name = new.find('": ', len(FIELD))
        value = new.removesuffix(",")
        opens = value.endswith(("[", "{")) or old.removesuffix(",").endswith(("[", "{"))
        if name < 0 or not new.startswith(FIELD) or old[: name + 3] != new[: name + 3] or opens:
            return None
        lines.append(value)
        a, b = a + len(old), b + len(new)
    return lines


def _common(last: str, part: str, a: int, b: int) -> int:
    """How many characters `last` from `a` and `part` from `b` share."""
    low, high = 0, min(len(last) - a, len(part) - b)
    while low < high:
        mid = (low + high + 1) // 2
        if last.startswith(part[b : b + mid], a):
            low = mid
        else:
            high = mid - 1
    return low


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end


def _objects(value: object) -> list[dict[str, Any]]:
    """A decoded list of jobs' fields (ValueError for anything else)."""
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return value
    raise ValueError("not a list of objects")
