"""`jobs compare` of a long run gives the same answer every time (issue 39, item 1): the chart series
cache (core/jobs/series_cache.py) keeps compare's final figures with its lines, and compare and the
Training charts keep their series apart, so neither overwrites nor misreads the other's."""

from __future__ import annotations

import json

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.jobs import series_cache
from gaudi_tui.core.jobs.compare import LINES
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.series import SAVE_BYTES, ChartSeries
from tests.jobs.conftest import replay


def lengthen(run: RunFolder, steps: int) -> None:
    """The recorded run's log lines repeated, in its own format, to `steps` steps: a metrics.jsonl
    past SAVE_BYTES, as a long fine-tune writes (its begin first, its summary and end last)."""
    events = [json.loads(line) for line in run.metrics_path.read_text().splitlines()]
    begin, logs = events[0], [e for e in events if e["event"] == "log"]
    lines = [json.dumps({**begin, "max_steps": steps})]
    for step in range(1, steps + 1):
        model = logs[step % len(logs)]
        lines.append(
            json.dumps(
                {
                    **model,
                    "step": step,
                    "max_steps": steps,
                    "time": begin["time"] + step,
                    "loss": 2.0 + (step % 89) / 100 - step / steps,
                    "memory_mib": 500.0 + (step % 1009) / 10,
                }
            )
        )
    end = begin["time"] + steps
    lines.append(json.dumps({"event": "summary", "time": end, "step": steps, "train_steps_per_second": 0.9}))
    lines.append(json.dumps({"event": "end", "time": end, "step": steps, "stopped": False}))
    run.metrics_path.write_text("\n".join(lines) + "\n")


def compared(capsys: pytest.CaptureFixture[str], *ids: str) -> tuple[dict, str]:
    assert main(["jobs", "compare", *ids, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert main(["jobs", "compare", *ids]) == 0
    return data, capsys.readouterr().out


def training_charts(run: RunFolder) -> ChartSeries:
    """The selected run's charts, read as the Training screen reads them (training_poll.py)."""
    charts = ChartSeries(run.metrics_path)
    charts.poll()
    while charts.behind:
        charts.poll()
    return charts


def test_a_long_run_compares_the_same_every_time(capsys: pytest.CaptureFixture[str]) -> None:
    short = replay()
    long = replay(recorded="ray-runs")
    lengthen(long, 8000)
    assert long.metrics_path.stat().st_size >= max(SAVE_BYTES, 1 << 20)
    first = compared(capsys, short.id, long.id)
    final = first[0]["runs"][1]["final"]
    assert (final["steps"], final["best_loss_step"]) == (8000, 89 * 89)  # loss 2 + (s % 89) / 100 - s / 8000
    assert final["steps_per_s"] == 0.9 and final["peak_memory_mib"] == pytest.approx(600.8)
    assert first[0]["runs"][1]["fields"]["run.world_size"] == "2"

    assert compared(capsys, short.id, long.id) == first  # warm: from the saved series
    assert series_cache.cache_path(long.metrics_path, LINES).exists()  # the warm path is taken
    charts = training_charts(long)  # Training opens it between two compares
    assert compared(capsys, short.id, long.id) == first
    again = ChartSeries(long.metrics_path)
    again.poll(max_bytes=64)  # Training's own saved series was not overwritten by compare's
    assert again.offset == long.metrics_path.stat().st_size
    assert again.data() == charts.data()


@pytest.mark.parametrize(
    "damage",
    [
        lambda f: {k: v for k, v in f.items() if k != "best"},
        lambda f: {**f, "best": [1.0, "7"]},
        lambda f: {**f, "peak": float("inf")},
        lambda f: {**f, "world": 2},
        lambda f: {**f, "ended_step": 8000.5},
        lambda f: {k: v for k, v in f.items() if k != "why"},
        lambda f: {**f, "why": {**f["why"], "recompiles": -1}},
        lambda f: {**f, "why": {**f["why"], "stalls": {"0": "x"}}},
    ],
)
def test_saved_figures_that_are_not_ones_are_read_afresh(capsys: pytest.CaptureFixture[str], damage) -> None:
    short, long = replay(), replay(recorded="ray-runs")
    lengthen(long, 8000)
    first = compared(capsys, short.id, long.id)
    cached = series_cache.cache_path(long.metrics_path, LINES)
    state = json.loads(cached.read_text())
    cached.write_text(json.dumps({**state, "figures": damage(state["figures"])}))
    assert compared(capsys, short.id, long.id) == first


WHY = [  # in the job's format (core/insight: compile_watch, stalls, profile; a real run's in tests/insight)
    {"event": "compile", "what": "compile", "frame": "0", "compile_id": "0/0", "step": 1, "seconds": 0.5},
    {"event": "compile", "what": "compile", "frame": "0", "compile_id": "0/1", "step": 2, "seconds": 0.4,
     "function": "forward", "reason": "tensor 'args[0]' size mismatch at index 1. expected 14, actual 15"},
    {"event": "compile", "what": "limit", "frame": "0", "step": 3, "setting": "recompile_limit", "limit": 8,
     "function": "forward", "reason": "tensor 'args[0]' size mismatch at index 1. expected 15, actual 16"},
    {"event": "stall", "rank": 0, "step": 10, "steps": 10, "wait_s": 3.0, "step_s": 1.0, "share": 0.3},
    {"event": "profile", "what": "taken", "first_step": 11, "step": 15, "steps": 5,
     "top_ops": [{"name": "aten::mm", "count": 5, "self_host_us": 2500.0, "self_device_us": 0.0}]},
]  # fmt: skip


def test_why_figures_are_kept_with_the_saved_series(capsys: pytest.CaptureFixture[str]) -> None:
    """A warm compare starts from the saved why figures and reads only what was appended."""
    short, long = replay(), replay(recorded="ray-runs")
    lengthen(long, 8000)
    with long.metrics_path.open("a") as out:
        out.writelines(json.dumps(event) + "\n" for event in WHY)
    first = compared(capsys, short.id, long.id)
    assert first[0]["runs"][1]["why"] == {
        "recompiles": "1 (2 compiles); frame 0 hit recompile_limit (8), runs eager",
        "input wait": "30% of step time",
        "top op (last profile)": "aten::mm 2.5 ms (steps 11–15)",
        "Gaudi graph compiles": "Gaudi runs only",
    }
    assert first[0]["runs"][0]["why"]["top op (last profile)"] == "none taken"
    assert "why slow" in first[1] and "aten::mm 2.5 ms (steps 11–15)" in first[1]
    assert compared(capsys, short.id, long.id) == first  # warm: from the saved series
    with long.metrics_path.open("a") as out:
        out.write(json.dumps({**WHY[3], "rank": 1, "share": 0.6}) + "\n")
    assert (
        compared(capsys, short.id, long.id)[0]["runs"][1]["why"]["input wait"] == "60% of step time (rank 1)"
    )
