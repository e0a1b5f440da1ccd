"""`gaudi-tui jobs insight ID [--json]` on a run folder as a Gaudi job leaves it."""

from __future__ import annotations

import json

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.insight import runtime
from tests.insight.test_findings import compiles_at, make_run, write_logs, write_runtime


def test_insight_prints_compiles_by_step_fallbacks_hbm_and_findings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = make_run()
    write_logs(run, range(1, 21), max_memory_mib=94.41 * 1024, total_memory_mib=94.62 * 1024)
    objects = compiles_at(list(range(1, 21)))
    objects.append((objects[-1][0], "cpu_fallback", {"TotalNumber": 3, "FallbackOps": {"aten::digamma": 3}}))
    write_runtime(run.hpu_metrics_path, objects)
    assert main(["jobs", "insight", run.id]) == 0
    out = capsys.readouterr().out
    assert "compiles (rank 0): 20 graphs, 5 in warm-up (to step 5), 15 after, 10 in the last 10 steps" in out
    assert "unit unconfirmed" in out and "CPU fallbacks (rank 0): aten::digamma ×3" in out
    assert "HBM peak (rank 0, from its log): 94.41 of 94.62 GB" in out
    assert "! still compiling after warm-up: 10 graphs in the last 10 steps" in out
    assert main(["jobs", "insight", run.id, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["graphs_by_rank"]["0"][:4] == [1, 2, 3, 4] and data["steps"][:4] == [1, 2, 3, 4]
    assert {f["id"] for f in data["findings"]} == {"recompiling", "cpu-fallback", "hbm-full"}


def test_insight_reads_a_file_larger_than_one_poll(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "MAX_POLL_BYTES", 512)
    run = make_run()
    write_logs(run, range(1, 21))
    write_runtime(run.hpu_metrics_path, compiles_at(list(range(1, 21))))
    assert main(["jobs", "insight", run.id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ranks"][0]["graphs"] == 20


def test_an_unknown_job_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", "insight", "no-such-job"]) == 1
    assert "gaudi-tui jobs:" in capsys.readouterr().err
