"""The runtime-metrics reader against files written as Intel's saver writes them
(tests/fakes/hpu_runtime/hpu_metrics_saver.py, made from gaudi-pytorch-bridge v1.19.0's saver.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gaudi_tui.core.insight.rank_files import find_files, rank_name
from gaudi_tui.core.insight.recipes import RecipeTally
from gaudi_tui.core.insight.runtime import HISTORY, MetricsTail, RuntimeMetrics
from tests.fakes.hpu_runtime.hpu_metrics_saver import Saver


def gc(total: int, recipes: list[list[object]] | None = None) -> list[tuple[str, object]]:
    stats: list[tuple[str, object]] = [("TotalNumber", total), ("TotalTime", total * 1000), ("AvgTime", 1000)]
    return stats + ([("recipe", recipes)] if recipes is not None else [])


def saver(monkeypatch: pytest.MonkeyPatch, path: Path, fmt: str = "json", rank: str | None = None) -> Saver:
    monkeypatch.setenv("PT_HPU_METRICS_FILE", str(path))
    monkeypatch.setenv("PT_HPU_METRICS_FILE_FORMAT", fmt)
    monkeypatch.setenv("PT_HPU_METRICS_DUMP_TRIGGERS", "process_exit,metric_change")
    if rank is None:
        monkeypatch.delenv("RANK", raising=False)
    else:
        monkeypatch.setenv("RANK", rank)
    monkeypatch.delenv("OMPI_COMM_WORLD_RANK", raising=False)
    return Saver()


def test_a_live_unterminated_array_is_read_as_it_grows_then_closed(tmp_path: Path, monkeypatch) -> None:
    out = saver(monkeypatch, tmp_path / "m.json")
    out.write("graph_compilation", gc(1), "metric_change")
    tail = MetricsTail(tmp_path / "m.json")
    assert tail.poll() and tail.metrics.graphs == 1 and not tail.metrics.closed
    assert not tail.poll()  # nothing new: nothing read again
    out.write("cpu_fallback", [("TotalNumber", 2), ("FallbackOps", {"aten::digamma": 2})], "metric_change")
    out.write("graph_compilation", gc(3), "metric_change")
    assert tail.poll() and tail.metrics.graphs == 3
    assert tail.metrics.fallback_ops() == {"aten::digamma": 2}
    assert [s.total for s in tail.metrics.compiles] == [1, 3]
    out.write("graph_compilation", gc(3), "process_exit")
    out.close()
    assert tail.poll() and tail.metrics.closed and tail.metrics.objects == 4


def test_a_killed_process_file_is_read_without_its_closing_bracket(tmp_path: Path, monkeypatch) -> None:
    out = saver(monkeypatch, tmp_path / "m.json")
    for n in range(1, 6):
        out.write("graph_compilation", gc(n), "metric_change")
    out.handle.close()  # type: ignore[union-attr]  # killed: no `]` ever
    tail = MetricsTail(tmp_path / "m.json")
    tail.poll()
    assert tail.metrics.graphs == 5 and not tail.metrics.closed


def test_the_text_format_is_read(tmp_path: Path, monkeypatch) -> None:
    out = saver(monkeypatch, tmp_path / "m.txt", fmt="text")
    out.write("graph_compilation", gc(2), "metric_change")
    out.write("cpu_fallback", [("TotalNumber", 1), ("FallbackOps", {"aten::digamma": 1})], "process_exit")
    out.close()
    tail = MetricsTail(tmp_path / "m.txt")
    tail.poll()
    assert tail.format == "text" and tail.metrics.graphs == 2
    assert tail.metrics.fallback_ops() == {"aten::digamma": 1}
    assert tail.metrics.number("graph_compilation", "TotalTime") == 2000


def test_every_rank_file_and_the_dot_n_files_are_found(tmp_path: Path, monkeypatch) -> None:
    base = tmp_path / "hpu_metrics.json"
    for rank in ("0", "1", "0"):  # rank 0 twice: the second attempt gets `.1`
        out = saver(monkeypatch, base, rank=rank)
        out.write("graph_compilation", gc(int(rank) + 7), "metric_change")
        out.close()
    assert rank_name(base, 1) == tmp_path / "hpu_metrics-rank1.json"
    assert sorted(find_files(base), key=str) == [(0, 0), (0, 1), (1, 0)]
    assert (tmp_path / "hpu_metrics-rank0.json.1").exists()
    metrics = RuntimeMetrics(base)
    metrics.poll()
    assert {rank: m.graphs for rank, m in metrics.ranks().items()} == {0: 7, 1: 8}
    assert find_files(tmp_path / "nothing.json") == {}


def test_gc_details_keep_only_the_top_recipes_of_the_latest_list(tmp_path: Path, monkeypatch) -> None:
    out = saver(monkeypatch, tmp_path / "m.json")
    recipes: list[list[object]] = []
    for n in range(HISTORY + 50):
        recipes.append([f"recipe_{n % 3}", 10 + n % 3])
        out.write("graph_compilation", gc(n + 1, recipes), "metric_change")
    tail = MetricsTail(tmp_path / "m.json")
    while tail.poll():
        pass
    assert tail.metrics.graphs == HISTORY + 50
    assert len(tail.metrics.compiles) == HISTORY  # bounded history
    assert "recipe" not in tail.metrics.latest["graph_compilation"]  # the long list is not kept
    assert tail.metrics.top_recipes[0][:2] == ("recipe_0", (HISTORY + 50 + 2) // 3)
    assert len(tail.buffer) == 0


def test_top_recipes_rank_by_count_then_time_and_count_only_what_is_new() -> None:
    tally = RecipeTally(n=2)
    tally.update([["a", 1], ["b", 5]])
    tally.update([["a", 1], ["b", 5], ["a", 1], ["c", 9]])  # the saver repeats the list, grown
    assert tally.top == [("a", 2, 2.0), ("c", 1, 9.0)] and tally.seen == 4
    tally.update([["z", 1]])  # shorter: another process's list, counted afresh
    assert tally.top == [("z", 1, 1.0)]


def test_a_broken_object_is_skipped_and_the_next_read(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text('[{"metric_name": "graph_compilation", "stat,\n{"metric_name": "graph_compilation", '
                    '"statistics": {"TotalNumber": 4}}')  # fmt: skip
    tail = MetricsTail(path)
    tail.poll()
    assert tail.metrics.graphs == 4 and tail.skipped == 1


def _written(tmp_path: Path, monkeypatch, fmt: str, recipes_per_compile: int) -> bytes:
    out = saver(monkeypatch, tmp_path / f"w.{fmt}", fmt=fmt)
    recipes: list[list[object]] = []
    for n in range(1, 8):
        recipes += [[f"r{n % 2}_{i}", n] for i in range(recipes_per_compile)]
        out.write("graph_compilation", gc(n, recipes), "metric_change")
        if n % 3 == 0:
            out.write("cpu_fallback", [("TotalNumber", n), ("FallbackOps", {"aten::x": n})], "metric_change")
    out.close()
    return (tmp_path / f"w.{fmt}").read_bytes()


@settings(max_examples=60, deadline=None)
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=60_000), max_size=12),
    fmt=st.sampled_from(["json", "text"]),
    per_compile=st.sampled_from([1, 200]),  # 200: lists past LIGHT_BYTES, read without their list
)
def test_any_chunking_of_the_file_gives_the_same_state(
    tmp_path_factory, cuts: list[int], fmt: str, per_compile: int
) -> None:
    folder = tmp_path_factory.mktemp("chunks")
    with pytest.MonkeyPatch.context() as mp:
        data = _written(folder, mp, fmt, per_compile)
    whole = MetricsTail(folder / "whole")
    whole.feed(data.decode())
    parts = MetricsTail(folder / "parts")
    text = data.decode()
    last = 0
    for cut in sorted(c % (len(text) + 1) for c in cuts):
        parts.feed(text[last:cut])
        last = cut
    parts.feed(text[last:])
    for tail in (whole, parts):
        assert tail.metrics.graphs == 7 and tail.metrics.fallback_ops() == {"aten::x": 6}
    assert list(parts.metrics.compiles) == list(whole.metrics.compiles)
    assert parts.metrics.top_recipes == whole.metrics.top_recipes
    assert parts.metrics.latest == whole.metrics.latest
    if fmt == "json":  # against a plain json.loads of the closed file (no light reading there)
        dumps = [d for d in json.loads(data) if d["metric_name"] == "graph_compilation"]
        assert [d["statistics"]["TotalNumber"] for d in dumps] == [s.total for s in whole.metrics.compiles]
        last = dict(dumps[-1]["statistics"])
        names = Counter(name for name, _ in last.pop("recipe"))
        assert whole.metrics.latest["graph_compilation"] == last
        assert [(n, c) for n, c, _ in whole.metrics.top_recipes] == sorted(
            names.items(), key=lambda kv: (-kv[1], kv[0])
        )[:10]
    assert parts.metrics.objects == whole.metrics.objects == 9
    assert parts.metrics.closed == whole.metrics.closed == (fmt == "json")
