"""`squeue --json` read job by job: an answer's jobs whose text is unchanged since the last answer
are not decoded again.

With 1,000 jobs the answer is ~2.6 MB and decoding all of it is most of a refresh's cost. Slurm
prints the document indented (22.05: two spaces a level), so each job of the top-level `jobs`
list starts and ends on a line of its own at four spaces, and no JSON string can hold a raw
newline: splitting the text there is exact. Each job's text is the key of its parsed `QueueJob`;
the changed jobs are decoded in one `json.loads` and parsed by `model.job_from_json` (not compared
field by field again: when every job changed, that comparison cost a fifth of a refresh); the rest
of the document (`meta`, `errors`) is decoded as before. An answer laid out otherwise (another
version, another indent) is decoded whole, as `Slurm.json` does.

A job's text changes at every scheduling pass even when nothing shown changed: the controller
rewrites `last_sched_evaluation` of each pending job. That field is not read (model._READ), so its
line is cut from the answer before the jobs are compared: a pass that only re-evaluated the queue
decodes nothing.
"""

from __future__ import annotations

import json
import re

from gaudi_tui.core.slurm.cli import SlurmError, answered
from gaudi_tui.core.slurm.model import QueueJob, job_from_json, jobs_from_json

JOBS = '\n  "jobs": ['
FIRST = "\n    {\n"
BETWEEN = "\n    },\n    {\n"
LAST = "\n    }\n  ]"
WHAT = "the queue"
UNREAD_CHURN = ("last_sched_evaluation",)
"""Fields of a job that change without a change the screen shows, and that model.py does not read."""
_CHURN = re.compile(r'\n      "(?:' + "|".join(UNREAD_CHURN) + r')": [0-9]+,(?=\n)')
"""Their lines at a job's field indent (6 spaces), not the last field of a job (no comma)."""

_PARSED: dict[str, QueueJob] = {}
"""Each job's text in the last answer → its QueueJob."""


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
            return jobs_from_json(answered(json.loads(text), "squeue", WHAT))
        answered(json.loads(parts[0]), "squeue", WHAT)
        known = [_PARSED.get(part) for part in parts[1]]
        new = [part for part, job in zip(parts[1], known, strict=True) if job is None]
        rows = json.loads("[{" + "},{".join(new) + "}]") if new else []  # one decode for all of them
    except ValueError:
        raise SlurmError("`squeue --json` printed something that is not JSON", "refused") from None
    decoded = map(job_from_json, rows)  # their text changed: no second comparison of their fields
    out = [job or next(decoded) for job in known]
    _PARSED.clear()  # keep only what this answer held
    _PARSED.update(zip(parts[1], out, strict=True))
    return out
