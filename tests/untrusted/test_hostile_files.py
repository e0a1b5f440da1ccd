"""Every reader of a file another process writes (a run folder, the shared state folder, a saved
hl-smi output, Slurm's JSON) against every case of the hostile catalogue (tests/untrusted/cases.py),
and against a file that shrinks or vanishes between two reads (issue 38, C).

Each reader's file holds good items around one hostile item: a value case goes where one value of
an item goes (`@` in `Reader.item`), a whole case (a 100 MiB line with no end, a truncated item)
replaces the last item. For each case the suite asserts the four things: memory grows by less than
64 MiB and the call answers within its bound (`cases.assert_bounded`), the caller gets a clear error
or the hostile item is read as a value in range or skipped and said (`Seen.said`: a count, an error,
a reader's "unreadable" None), and the other items are still read (`Reader.keeps`; a one-item
document: the same reader then reads a good one). A whole case at the end of a file of lines is
what a writer may still be finishing: it waits, unsaid. Readers with `said=None` say nothing of a
line they pass over, as it is said elsewhere or is no item: the job list's summary, the insight
points and the end event (the Training detail's `MetricsReader` of the same file counts it), a job's
output readers and followers (a line that is not metrics is the job's log), the notifications
follower (a line that is not an alert is no alert). The runtime file's statistic that is not a
number is kept as unknown (the panel shows it so), counted as said.

The 100 MiB line is written once a session and copied a MiB at a time after each reader's own
beginning, never held whole by the test. `test_an_alert_of_hostile_words_reaches_each_sink_as_text`
covers what the alert sinks are handed (the delivery child's stdin, a webhook's body, the `command`
sink's environment).
"""

from __future__ import annotations

import math
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gaudi_tui.core.alerts import sinks
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.untrusted.data import INT_MAX, INT_MIN, loads
from tests.untrusted.cases import CASES, CHUNK, FILE_CASES, WHOLE, assert_bounded, chunks
from tests.untrusted.file_readers import ANSWERS, DOCUMENTS, EVENTS, READERS, STREAMS
from tests.untrusted.reader_model import Poller, Reader, Seen
from tests.untrusted.readers_whole import FILES

# ---- the checks ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def huge_line(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The 100 MiB line with no end, written once, a chunk at a time (removed after the session:
    pytest keeps the last sessions' folders)."""
    path = tmp_path_factory.mktemp("hostile") / "line-100mib"
    with path.open("wb") as fh:
        for chunk in chunks(CASES["line_100mib_no_end"]):
            fh.write(chunk)
    yield path
    path.unlink(missing_ok=True)


def _sane(value: object) -> bool:
    """A value a caller can hold: a finite number within 64 bits, or text."""
    if isinstance(value, tuple):
        return all(_sane(v) for v in value)
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return INT_MIN <= value <= INT_MAX
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return len(value) < CHUNK
    return False


def _path(reader_name: str, folder: Path) -> Path:
    where = FILES.get(reader_name)
    path = where(folder) if where else folder / READERS[reader_name].file
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _setup(reader_name: str, folder: Path) -> tuple[Reader, Path]:
    reader = READERS[reader_name]
    if reader.prepare is not None:
        reader = reader.prepare(folder, reader)
    return reader, _path(reader_name, folder)


def _write(path: Path, reader: Reader, case_name: str, huge_line: Path) -> None:
    case = CASES[case_name]
    with path.open("wb") as fh:
        fh.write(reader.before)
        if case_name == "line_100mib_no_end":
            with huge_line.open("rb") as src:
                shutil.copyfileobj(src, fh, CHUNK)
        elif case_name in WHOLE:
            assert isinstance(case, bytes)
            fh.write(case)
        else:
            assert isinstance(case, bytes)
            fh.write(reader.fill(case) + (b"\n" if reader.before else b"") + reader.after)


def _check(reader_name: str, reader: Reader, result: Seen | BaseException, keeps: frozenset[object]) -> None:
    if isinstance(result, BaseException):  # a clear error, and one the caller catches
        assert str(result), f"{reader_name}: {type(result).__name__} with no words"
        return
    bad = [v for v in result.values if not _sane(v)]
    assert not bad, f"{reader_name} read a value no caller can hold: {str(bad[0])[:80]}"
    assert keeps <= set(result.values), (
        f"{reader_name} lost good items: {sorted(keeps - set(result.values), key=str)}"
    )


def _good_after(reader: Reader, path: Path, poll: Poller | None = None) -> None:
    """The reader (the same one when it keeps state) reads a good file in the bad one's place."""
    if reader.before:
        return
    path.write_bytes(reader.fill(reader.good))
    seen = (poll or reader.open(path))()
    assert seen.values and all(_sane(v) for v in seen.values), f"the good file after: {seen}"


UNBOUNDED_BY_SIZE = "line_100mib_no_end"
"""Not asked of a Slurm command's answer (ANSWERS): it is held whole to be decoded (40,000 jobs are
~100 MB of JSON) and Slurm.run bounds it by its time limit, not its size; every other case is."""
PAIRS = [
    (reader, case)
    for reader in READERS
    for case in FILE_CASES
    if not (reader in ANSWERS and case == UNBOUNDED_BY_SIZE)
]


@pytest.mark.parametrize(("reader_name", "case_name"), PAIRS)
def test_a_hostile_file_is_bounded_said_and_the_rest_read(
    reader_name: str, case_name: str, tmp_path: Path, huge_line: Path
) -> None:
    reader, path = _setup(reader_name, tmp_path)
    _write(path, reader, case_name, huge_line)
    poll = reader.open(path)
    try:
        result = assert_bounded(poll, errors=reader.errors)
        _check(reader_name, reader, result, reader.keeps_whole if case_name in WHOLE else reader.keeps)
        if isinstance(result, Seen) and reader_name in DOCUMENTS:
            assert result.values or result.said, f"{reader_name} passed over {case_name} and said nothing"
        elif isinstance(result, Seen) and result.said is not None and case_name not in WHOLE:
            hostile_read = bool(set(result.values) - reader.keeps)  # as a value in range
            assert hostile_read or result.said, (
                f"{reader_name} passed over {case_name} and said nothing: {result}"
            )
        path.unlink()
        _good_after(reader, path)
    finally:  # what a reader copied of a 100 MiB line (a job's log) is not kept with pytest's folders
        shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("reader_name", [name for name in READERS if name not in ANSWERS | STREAMS])
def test_a_file_that_shrinks_or_vanishes_between_reads(reader_name: str, event: str, tmp_path: Path) -> None:
    """Read once, then the file is cut mid-item or deleted, read again (bounded, no error the caller
    does not catch), then a new good item comes: the same reader reads it."""
    reader, path = _setup(reader_name, tmp_path)
    whole = reader.before + reader.fill(reader.good) + (b"\n" if reader.before else b"") + reader.after
    path.write_bytes(whole)
    poll = reader.open(path)
    first = assert_bounded(poll, errors=reader.errors)
    assert isinstance(first, Seen) and first.values, f"{reader_name} read nothing of a good file: {first}"
    if event == "shrinks":
        path.write_bytes(whole[: max(1, len(reader.before or whole) // 2)])
    else:
        path.unlink()
    again = assert_bounded(poll, errors=reader.errors)
    if isinstance(again, Seen):
        assert all(_sane(v) for v in again.values)
    if reader.before:  # the writer goes on after the cut, or starts a new file
        if event == "shrinks":
            with path.open("ab") as fh:
                fh.write(reader.then + reader.fill(b"9") + b"\n")
        else:
            path.write_bytes(reader.before + reader.fill(b"9") + b"\n")
        last = assert_bounded(poll, errors=reader.errors)
        assert isinstance(last, Seen), f"{reader_name} after the new item: {last}"
        assert reader.new in last.values, f"{reader_name} did not read the new item: {last}"
    else:
        _good_after(reader, path, poll)


HOSTILE_WORDS = {
    "a name that is not UTF-8": b"run-\xff\xfe".decode("utf-8", "surrogateescape"),
    "a lone surrogate": "\ud800",
    "a Slack mention": "<!channel> & <http://x|y>",
    "a 1 MiB line": "x" * (1 << 20),
}
"""Words an alert carries from outside: a process's or a run folder's name, a job's error line."""
SEES_TEXT = "import os, sys; sys.exit(0 if os.environ['GAUDI_TUI_ALERT_TEXT'].startswith(sys.argv[1]) else 3)"
"""The `command` sink's program: exits 0 when the alert's words reached it as text."""


@pytest.mark.parametrize("case", list(HOSTILE_WORDS))
def test_an_alert_of_hostile_words_reaches_each_sink_as_text(case: str) -> None:
    """What the sinks are handed: the delivery child's stdin (the alert's JSON), the webhook's body
    and the `command` sink's environment, each text a reader can take, bounded, and said."""
    words = HOSTILE_WORDS[case]
    alert = Alert("job_ended", "warning", words, "Job failed", words, "k1", 1.0)
    shown = words.encode("utf-8", "replace").decode("utf-8")[:32]  # what a reader can show of them
    sent = assert_bounded(lambda: alert.to_json().encode("utf-8"), errors=())
    assert Alert.from_json(sent) == alert  # the delivery child reads what the panel wrote
    body = assert_bounded(lambda: sinks.payload(alert), errors=())
    assert isinstance(body, bytes)
    said = loads(body, what="the webhook body")  # text and JSON: no lone surrogate, no NaN
    assert isinstance(said, dict) and "<!channel>" not in said["text"]
    result = assert_bounded(
        lambda: sinks.run_command((sys.executable, "-c", SEES_TEXT, shown), alert, 30.0),
        errors=(),
        seconds=30.0,
    )
    assert result is None, f"the command sink: {result}"
