"""Output with no line end (a binary dump, a progress bar drawn with backspaces or redrawn with \\r)
leaves the readers, the Ray and Slurm mirrors and the log view with bounded state: the open line never grows past
`lines.LIMIT`, memory stays flat over 64 MiB of it, and what follows it is still read."""

from __future__ import annotations

import json
import threading
import tracemalloc
from pathlib import Path

import pytest

from gaudi_tui.core.jobs.kinds.command_follow import OutputFollower
from gaudi_tui.core.jobs.readers import OutputMetrics
from gaudi_tui.core.jobs.readers.lines import LIMIT, Lines
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import from_mapping
from gaudi_tui.core.jobs.status import JobStatus
from gaudi_tui.core.jobs.tailing import LogTail
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.targets.ray.mirror import LogMirror
from gaudi_tui.core.jobs.targets.ray.record import ClusterRecord
from gaudi_tui.core.jobs.targets.slurm import supervise
from gaudi_tui.core.jobs.targets.slurm.record import SlurmRecord
from gaudi_tui.core.jobs.targets.slurm.supervise import Follow
from gaudi_tui.core.jobs.worker.logstream import METRIC_PREFIX, RANK_PREFIX
from gaudi_tui.core.slurm.cli import Slurm
from gaudi_tui.core.untrusted.files import OPEN_LINE_LIMIT

DATA = Path(__file__).parent / "data"
CHUNK = "#\b" * 32 * 1024
"""64 KiB of a bar drawn with backspaces: no \\r, no \\n."""
TOTAL = 64 * 1024 * 1024


def test_a_64_mib_line_without_an_end_keeps_the_reader_bounded() -> None:
    cuts: list[str] = []
    out = OutputMetrics("json", on_cut=cuts.append)
    tracemalloc.start()
    try:
        for _ in range(TOTAL // len(CHUNK)):
            assert out.feed(CHUNK) == []
            assert out.lines.open_len <= LIMIT
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * 1024 * 1024, f"{peak} bytes held for a line that has no end"
    assert len(out.lines.peek()) == LIMIT and out.lines.cut == TOTAL - LIMIT
    assert cuts == [CHUNK[:80]]  # said once for the line, with its beginning
    events = out.feed('\n{"step": 7, "loss": 0.5}\n')  # the line ends: what follows is read
    assert [(e["event"], e["step"]) for e in events] == [("begin", 0), ("log", 7)]
    assert out.lines.open_len == 0 and out.lines.cut == 0


def test_every_line_past_the_limit_is_said_once() -> None:
    cuts: list[str] = []
    lines = Lines("\r\n", limit=10, on_cut=cuts.append)
    assert lines.feed("a" * 25 + "\rb" * 3 + "c" * 30 + "\n") == ["a" * 10, "b", "b", "b" + "c" * 9]
    assert cuts == ["a" * 10, "b" + "c" * 9]


def test_a_bar_redrawn_with_carriage_returns_is_read_from_the_real_recording() -> None:
    """The Trainer 4.x tqdm recording with its bar redraws joined by \\r again (as the terminal got
    them), fed through the mirror's line splitting and then the reader, in small chunks: the
    dicts still get their step from the bar."""
    text = (DATA / "trainer-4.x-tqdm.log").read_text()
    joined = "".join(
        ("\r" if line.lstrip().startswith(tuple("0123456789")) and "%|" in line else "\n" if i else "") + line
        for i, line in enumerate(text.split("\n"))
    )
    assert joined.count("\r") > 10
    mirrored: list[str] = []
    mirror = Lines("\n", passes=True)
    for i in range(0, len(joined), 5):
        for piece, whole in mirror.pieces(joined[i : i + 5]):
            mirrored.append(piece + "\n" if whole else piece)
    mirrored.append(mirror.take())
    assert "".join(mirrored) == joined  # the mirror passes every redraw on, nothing lost
    out = OutputMetrics(clock=lambda: 1.0)
    events = [e for part in mirrored for e in out.feed(part)] + out.flush()
    logs = [(e["step"], e["loss"]) for e in events if e["event"] == "log"]
    assert logs == [(3, 5.392), (6, 2.3), (9, 1.729), (12, 1.549)]


def test_the_ray_mirror_passes_a_line_without_an_end_through_and_stays_bounded(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    mirror = LogMirror(run, ClusterRecord("http://h:8265", "sid", 1))
    offset = 0
    for _ in range(64):  # 4 MiB of a bar drawn with backspaces
        mirror.feed_at(offset, CHUNK)
        offset += len(CHUNK)
        assert mirror.lines.open_len <= LIMIT
    event = json.dumps({"event": "log", "step": 3, "loss": 1.5})
    mirror.feed_at(offset, f"\n{METRIC_PREFIX}{event}\nbar\r 10%|\r 20%|")
    assert run.metrics_path.read_text().splitlines() == [event]
    log = run.log_path.read_bytes().decode()
    assert log == CHUNK * 64 + "\n" + "bar\r 10%|\r"  # every byte, the bar's redraws as they come
    mirror.flush_partial()
    assert run.log_path.read_bytes().endswith(b"\r 10%|\r 20%|\n")


def test_the_log_view_keeps_a_line_without_an_end_bounded(tmp_path: Path) -> None:
    """The Training screen's log tail (`LogTail`) over 16 MiB with no line end, appended 128 KiB at
    a time as a job prints it: the open line stays within the bound; a bar redrawn with \\r shows its
    last redraw when its line ends."""
    log = tmp_path / "stdout.log"
    log.write_bytes(b"")
    tail = LogTail(log)
    piece = ("#\b" * 64 * 1024).encode()
    for _ in range(128):
        with log.open("ab") as fh:
            fh.write(piece)
        assert tail.poll() == []
        assert len(tail._reader.partial) <= OPEN_LINE_LIMIT
    with log.open("ab") as fh:
        fh.write(b"\nnext\n" + b"".join(b"\r %3d%%|" % (i % 100) for i in range(20_000)))
    assert [len(line) for line in tail.poll()] == [OPEN_LINE_LIMIT, 4]
    assert len(tail._reader.partial) <= OPEN_LINE_LIMIT
    with log.open("ab") as fh:
        fh.write(b"\n")
    assert tail.poll() == [f" {19_999 % 100:3d}%|"]


def test_the_follower_says_once_in_the_supervisor_log_what_it_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = RunFolder(tmp_path)
    log = tmp_path / "stdout.log"
    log.write_text("x" * (3 * LIMIT) + '\n{"step": 2, "loss": 0.25}\n' + "y" * (2 * LIMIT))
    follower = OutputFollower(run, from_mapping({"kind": "command", "command": ["true"]}), log, offset=0)
    while follower.poll():
        pass
    follower.close(stopped=False)
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 2 and all("past 64 KiB without a line end" in s for s in said), said
    assert said[0].endswith(f"(it begins {'x' * 80!r}); the rest of it is not read for metrics")
    logged = [json.loads(x) for x in run.metrics_path.read_text().splitlines()]
    assert [(e["event"], e["step"]) for e in logged] == [("begin", 0), ("log", 2), ("end", 2)]


def test_the_slurm_mirror_copies_in_chunks_and_stays_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Slurm supervisor's copy of Slurm's output file (`Follow.tail`): 6 MiB with no line end,
    then a rank line and a bar's redraws, copied in 1 MiB chunks with the open line bounded."""
    run = RunFolder(tmp_path)
    record = SlurmRecord(attempt=1, job_name="j", script="", job_id=7)
    attempt = Attempt(run, from_mapping({}), None, False, threading.Event(), lambda **_: None, JobStatus)
    follow = Follow(attempt, record, Slurm())
    out = record.output(run)
    assert out is not None
    out.parent.mkdir()
    out.write_bytes(CHUNK.encode() * 96)
    monkeypatch.setattr(supervise, "TAIL_CHUNKS", 2)
    assert follow.tail() and follow.consumed == 2 * supervise.READ_CHUNK  # a bounded copy a poll
    assert follow.lines.open_len <= LIMIT
    while follow.tail():
        assert follow.lines.open_len <= LIMIT
    with out.open("ab") as fh:
        rank = json.dumps({"rank": 0, "node": "n1"})
        fh.write(f"\n{RANK_PREFIX}{rank}\nbar\r 10%|\r 20%|".encode())
    follow.flush()
    assert follow.record.ranks == {"0": {"rank": 0, "node": "n1"}}
    assert run.log_path.read_bytes() == CHUNK.encode() * 96 + b"\nbar\r 10%|\r 20%|\n"
