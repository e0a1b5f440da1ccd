"""The insight's first read of metrics.jsonl goes backwards from the end and parses only the lines it
needs (core/jobs/insight/points.py); lines appended later are applied forwards."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gaudi_tui.core.jobs import summary
from gaudi_tui.core.jobs.insight import points, report
from gaudi_tui.core.jobs.insight.points import Point, Points
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from tests.insight.test_findings import T0, make_run

JUNK = ["", "not json", "[1, 2]", '{"event": "log", "step": "seven"', '{"event":"log","step":true}']


@st.composite
def histories(draw: st.DrawFn) -> list[object]:
    """metrics.jsonl as a job writes it, resumes (a begin at an earlier step) and odd lines included."""
    lines: list[object] = []
    step = 0
    for _ in range(draw(st.integers(0, 60))):
        kind = draw(st.sampled_from(["log", "log", "log", "begin", "summary", "eval", "junk"]))
        if kind == "log":
            step += draw(st.integers(0, 3))
            event = {"event": "log", "step": step, "time": T0 + step, "loss": 1.0}
            if draw(st.booleans()):
                event["max_memory_mib"] = float(draw(st.integers(0, 100)))
            if draw(st.booleans()):
                event["graph_compilations"] = draw(st.integers(0, 9))
            lines.append(event)
        elif kind == "begin":
            step = draw(st.integers(0, step))
            lines.append({"event": "begin", "step": step, "time": T0 + step})
        elif kind == "summary":
            peak = draw(st.one_of(st.none(), st.floats(0, 100)))
            lines.append(
                {"event": "summary", "step": step, **({} if peak is None else {"max_memory_mib": peak})}
            )
        elif kind == "eval":
            lines.append({"event": "eval", "step": step, "eval_loss": 0.5})
        else:
            lines.append(draw(st.sampled_from(JUNK)))
    return lines


def write(path: Path, lines: list[object]) -> None:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))


def forward(lines: list[object]) -> Points:
    history = Points()
    for line in lines:
        if (event := summary.event_of(line if isinstance(line, str) else json.dumps(line))) is not None:
            history.apply(event)
    return history


def backward(path: Path) -> Points:
    history = Points()
    with path.open("rb") as fh:
        history.read_back(fh, path.stat().st_size)
    return history


def state(history: Points) -> tuple[list[Point], int, float | None]:
    return list(history.points), history.begin_step, history.summary_peak


@settings(max_examples=150, deadline=None)
@given(histories())
def test_a_backward_read_finds_what_a_forward_read_of_every_line_finds(lines: list[object]) -> None:
    """Within POINTS, the same points, latest begin and newest peak as applying every line in order."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "metrics.jsonl"
        write(path, lines)
        assert state(backward(path)) == state(forward(lines))


@settings(max_examples=150, deadline=None)
@given(histories())
def test_a_backward_read_keeps_the_newest_points_no_later_resume_undid(lines: list[object]) -> None:
    """Past POINTS, the newest POINTS of the points that every later begin's step is at or above."""
    parsed = [summary.event_of(e if isinstance(e, str) else json.dumps(e)) for e in lines]
    events = [e for e in parsed if e is not None]
    step = [points.point_of(e).step for e in events]
    kept = [
        points.point_of(e)
        for i, e in enumerate(events)
        if e.get("event") == "log"
        and all(step[i] <= step[j] for j in range(i, len(events)) if events[j].get("event") == "begin")
    ]
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        path = Path(folder) / "metrics.jsonl"
        write(path, lines)
        patch.setattr(points, "POINTS", 5)
        assert list(backward(path).points) == kept[-5:]


def test_the_first_read_of_a_long_history_parses_only_the_lines_it_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """20,000 log lines: the newest POINTS, the begin and the summary are parsed, nothing else; lines
    appended afterwards (a resume among them) are applied as a forward read of every line would."""
    run = make_run()
    lines: list[object] = [{"event": "begin", "step": 0, "time": T0}]
    lines += [
        {"event": "log", "step": s, "time": T0 + s, "max_memory_mib": float(s % 7)} for s in range(1, 20_001)
    ]
    lines.append({"event": "summary", "step": 20_000, "max_memory_mib": 91_000.0})
    write(run.metrics_path, lines)
    parsed: list[bytes | str] = []

    def counting(line: bytes | str) -> dict | None:
        parsed.append(line)
        return summary.event_of(line)

    monkeypatch.setattr(points, "event_of", counting)
    monkeypatch.setattr(report, "event_of", counting)
    watcher = InsightWatcher(run)
    assert watcher.poll() is True
    assert len(parsed) == points.POINTS + 2  # the old forward read parsed all 20,002
    assert state(watcher.history) == state(forward(lines))
    assert watcher.insight(now=T0 + 30_000).max_memory_mib == 91_000.0
    resumed = [{"event": "begin", "step": 19_990, "time": T0 + 30_000}]
    resumed += [{"event": "log", "step": s, "time": T0 + 30_000 + s} for s in range(19_991, 19_996)]
    with run.metrics_path.open("a") as out:
        out.write("".join(json.dumps(e) + "\n" for e in resumed))
    assert watcher.poll() is True
    assert state(watcher.history) == state(forward(lines + resumed))
    assert watcher.insight(now=T0 + 60_000).step == 19_995


def test_a_half_written_last_line_waits_for_its_end() -> None:
    run = make_run()
    run.metrics_path.write_text(
        '{"event":"begin","step":0}\n{"event":"log","step":1,"time":1.0}\n{"event":"log","st'
    )
    watcher = InsightWatcher(run)
    watcher.poll()
    assert [p.step for p in watcher.history.points] == [1]
    with run.metrics_path.open("a") as out:
        out.write('ep":2,"time":2.0}\n')
    watcher.poll()
    assert [p.step for p in watcher.history.points] == [1, 2]
