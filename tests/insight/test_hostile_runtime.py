"""The runtime metrics file from outside (issue 38): H7 (a NaN, an infinity, a huge integer or deep
nesting never raises from `compile_figures`, so it never kills the user's training), M1 (the text
form's recipe line is read without `ast.literal_eval`'s 145x memory), M2 (rank files under a folder
with a dot, named as Intel names them), M9 (a `]` in the rest of a skipped object is not the array's
end), and H8's callback half (a user's `logs` never overwrite `time`, `step` or `event`).

The file layout follows Intel's writer (tests/fakes/hpu_runtime/hpu_metrics_saver.py, made from
HabanaAI/gaudi-pytorch-bridge v1.19.0 saver.py): `[`, objects joined by `",\\n"`, `]\\n` at exit."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import pytest

from gaudi_tui.core.insight.rank_files import find_files, rank_name
from gaudi_tui.core.insight.runtime import (
    LIGHT_BYTES,
    MAX_OBJECT_BYTES,
    MetricsTail,
    RuntimeMetrics,
    compile_figures,
)
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.spec import JobSpec
from tests.fakes.hpu_runtime.hpu_metrics_saver import Saver


def _gc(total: str, extra: str = "") -> str:
    return (
        '{"metric_name": "graph_compilation", "triggered_by": "metric_change", '
        f'"generated_on": "2026-01-01T00:00:00", "statistics": {{"TotalNumber": {total}, '
        f'"TotalTime": 5, "AvgTime": 1{extra}}}}}'
    )


JSON_CASES = {
    "nan": _gc("NaN"),
    "infinity": _gc("Infinity"),
    "digits_400": _gc("9" * 400),
    "digits_5000": _gc("9" * 5000),
    "nested_100000": '{"metric_name": "cpu_fallback", "statistics": {"FallbackOps": '
    + "[" * 100_000
    + "]" * 100_000
    + "}}",
    "light_digits_5000": _gc("9" * 5000, ', "recipe": [' + ", ".join(['["r", 1]'] * LIGHT_BYTES) + "]"),
}
TEXT_CASES = {
    "text_inf": "1e400",
    "text_digits_5000": "9" * 5000,
    "text_nan": "nan",
}


@pytest.mark.parametrize("name", sorted(JSON_CASES))
def test_a_hostile_json_object_is_skipped_and_the_next_read(name: str, tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text("[" + ",\n".join([_gc("1"), JSON_CASES[name], _gc("3")]))
    metrics = RuntimeMetrics(path)
    assert compile_figures(metrics) == {"graph_compilations": 3, "graph_compile_time": 5.0}
    assert [s.total for s in metrics.ranks()[0].compiles] == [1, 3]


@pytest.mark.parametrize("name", sorted(TEXT_CASES))
def test_a_hostile_text_statistic_is_dropped(name: str, tmp_path: Path) -> None:
    path = tmp_path / "m.txt"
    block = "Metric name: graph_compilation\nTriggered by: metric_change\nStatistics:\n"
    path.write_text(
        f"{block}\tTotalNumber: 2\n\n{block}\tTotalNumber: {TEXT_CASES[name]}\n\tTotalTime: 7\n\n"
    )
    metrics = RuntimeMetrics(path)
    assert compile_figures(metrics) == {}  # the newest dump has no count a reader can hold
    rank0 = metrics.ranks()[0]
    assert [s.total for s in rank0.compiles] == [2] and rank0.number("graph_compilation", "TotalTime") == 7.0


def test_the_training_callback_survives_a_hostile_file_and_keeps_its_own_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gaudi_tui.core.jobs.worker.callbacks import CountingCollator, MetricsCallback, StopCallback

    hpu = tmp_path / "hpu.json"
    hpu.write_text("[" + _gc("9" * 400))
    monkeypatch.setenv("PT_HPU_METRICS_FILE", str(hpu))
    run = runfolder.create(JobSpec(), accelerator="hpu")
    written: list[dict[str, object]] = []
    sink = SimpleNamespace(write=written.append, close=lambda: None)
    callback = MetricsCallback(
        run, "hpu", CountingCollator(None), 4, None, StopCallback(lambda: False), sink=lambda: sink
    )
    callback.out = sink  # type: ignore[assignment]
    state = SimpleNamespace(is_world_process_zero=True, global_step=5, max_steps=10)
    logs = {"loss": 1.5, "time": "user's", "step": 99, "event": "user's", "max_steps": -1}
    callback.on_log(None, state, None, logs=logs)
    ((event,),) = [written]
    assert (event["event"], event["step"], event["max_steps"], event["loss"]) == ("log", 5, 10, 1.5)
    assert isinstance(event["time"], float) and "graph_compilations" not in event
    callback.on_log(None, state, None, logs={"train_runtime": 3.0, "step": 1, "time": 0})
    assert (written[1]["event"], written[1]["step"]) == ("summary", 5) and written[1]["time"] != 0


def test_a_long_text_recipe_line_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """M1: a 2.2 MiB recipe line held +320 MiB under ast.literal_eval."""
    recipes = [[f"recipe_{n % 5000}_{'x' * 40}", 12.5] for n in range(40_000)]
    line = str(recipes)
    assert len(line) > 2 * 2**20
    path = tmp_path / "m.txt"
    path.write_text(
        "Metric name: graph_compilation\nTriggered by: metric_change\nStatistics:\n"
        f"\tTotalNumber: 40000\n\trecipe: {line}\n\n"
    )
    tail = MetricsTail(path)
    tracemalloc.start()
    try:
        while tail.offset < path.stat().st_size:
            tail.poll()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 48 * 2**20, f"{peak / 2**20:.0f} MiB for a {len(line) / 2**20:.1f} MiB line"
    assert tail.metrics.graphs == 40_000
    top = tail.metrics.top_recipes[0]
    assert top[0] == f"recipe_0_{'x' * 40}" and top[1] == 8 and top[2] == 100.0


def test_rank_files_under_a_folder_with_a_dot_are_found(tmp_path: Path, monkeypatch) -> None:
    """M2: Intel cuts the whole path at its last dot, so `job.v2/hpu_metrics` with RANK=1 is
    `job-rank1.v2/hpu_metrics`."""
    base = tmp_path / "job.v2" / "hpu_metrics"
    for rank in ("0", "1"):
        monkeypatch.setenv("PT_HPU_METRICS_FILE", str(base))
        monkeypatch.setenv("RANK", rank)
        out = Saver()
        out.write("graph_compilation", [("TotalNumber", int(rank) + 4), ("TotalTime", 1)], "metric_change")
        out.close()
    assert rank_name(base, 1) == tmp_path / "job-rank1.v2" / "hpu_metrics"
    assert (tmp_path / "job-rank1.v2" / "hpu_metrics").exists()
    assert sorted(find_files(base)) == [(0, 0), (1, 0)]
    metrics = RuntimeMetrics(base)
    metrics.poll()
    assert {rank: m.graphs for rank, m in metrics.ranks().items()} == {0: 4, 1: 5}


def test_a_bracket_inside_a_skipped_object_is_not_the_arrays_end(tmp_path: Path) -> None:
    """M9: the rest of an object too large to keep arrives in later reads; a `]` in its recipe list
    marked the rank as exited."""
    path = tmp_path / "m.json"
    head = '[{"metric_name": "graph_compilation", "statistics": {"recipe": [["' + "x" * MAX_OBJECT_BYTES
    path.write_text(head)
    tail = MetricsTail(path, max_bytes=2**20)
    while tail.offset < path.stat().st_size:
        tail.poll()
    with path.open("a") as fh:
        fh.write('"], ["y]", 1]]')
    tail.poll()
    assert not tail.metrics.closed
    with path.open("a") as fh:
        fh.write(', "TotalNumber": 1}},\n' + _gc("2"))
    tail.poll()
    assert not tail.metrics.closed and tail.metrics.graphs == 2 and tail.skipped == 1
    with path.open("a") as fh:
        fh.write("]\n")
    tail.poll()
    assert tail.metrics.closed
