"""Each finding fires on its signal and stays quiet without it, on run folders written as the
job's processes write them (metrics.jsonl events; the runtime's JSON layout from Intel's saver)."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from pathlib import Path

import pytest

from gaudi_tui.core.insight import findings
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.insight import report
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus, ProcRef
from gaudi_tui.core.untrusted.files import AppendReader

DATA = Path(__file__).parent / "data"
T0 = time.time() - 1000


def make_run(started_ago: float = 30.0, **spec: object) -> RunFolder:
    run = runfolder.create(JobSpec(**{"device": "hpu", "max_steps": 20, **spec}), accelerator="hpu")  # type: ignore[arg-type]
    now = time.time()
    run.write_status(
        JobStatus(state="running", started=now - started_ago, supervisor=ProcRef.of(os.getpid()))
    )
    return run


def write_logs(run: RunFolder, steps: range, **figures: float) -> None:
    with run.metrics_path.open("a") as out:
        out.write(json.dumps({"event": "begin", "step": 0, "time": T0}) + "\n")
        for step in steps:
            out.write(
                json.dumps({"event": "log", "step": step, "time": T0 + step, "loss": 1.0, **figures}) + "\n"
            )


def write_runtime(path: Path, objects: list[tuple[float, str, dict]]) -> None:
    """The saver's layout: `[`, objects joined by `,\\n`, no `]` (still running)."""
    dumps = [
        json.dumps({"metric_name": name, "triggered_by": "metric_change",
                    "generated_on": datetime.fromtimestamp(when).isoformat(), "statistics": stats})
        for when, name, stats in objects
    ]  # fmt: skip
    path.write_text("[" + ",\n".join(dumps))


def compiles_at(steps: list[int]) -> list[tuple[float, str, dict]]:
    return [(T0 + s - 0.5, "graph_compilation", {"TotalNumber": n, "TotalTime": n * 2_000_000})
            for n, s in enumerate(steps, start=1)]  # fmt: skip


def ids(run: RunFolder) -> list[str]:
    watcher = InsightWatcher(run)
    watcher.poll()
    return [f.id for f in watcher.insight().findings]


def test_compiles_after_warm_up_fire_and_settled_compiles_do_not() -> None:
    storm = make_run()
    write_logs(storm, range(1, 21))
    write_runtime(storm.hpu_metrics_path, compiles_at(list(range(1, 21))))
    watcher = InsightWatcher(storm)
    watcher.poll()
    insight = watcher.insight()
    (finding,) = insight.findings
    assert finding.text == "still compiling after warm-up: 10 graphs in the last 10 steps"
    assert insight.ranks[0].warmup_graphs == 5 and insight.ranks[0].after_warmup_graphs == 15
    assert insight.graphs_by_rank[0][:3] == [1, 2, 3]

    settled = make_run()
    write_logs(settled, range(1, 21))
    write_runtime(settled.hpu_metrics_path, compiles_at([1, 1, 2, 15]))  # one late compile (eval)
    assert ids(settled) == []


def test_a_storm_on_one_rank_is_named() -> None:
    run = make_run()
    write_logs(run, range(1, 21))
    write_runtime(run.path / "hpu_metrics-rank0.json", compiles_at([1, 2]))
    write_runtime(run.path / "hpu_metrics-rank1.json", compiles_at([1, 2, 12, 14, 16, 18]))
    watcher = InsightWatcher(run)
    watcher.poll()
    (finding,) = watcher.insight().findings
    assert finding.text == "still compiling after warm-up: 4 graphs in the last 10 steps on rank 1"


def test_ops_on_the_cpu_fire_and_an_empty_fallback_list_does_not() -> None:
    run = make_run()
    write_logs(run, range(1, 3))
    stats = {"TotalNumber": 2, "FallbackOps": {"aten::digamma": 2}}
    write_runtime(run.hpu_metrics_path, [(T0 + 1, "cpu_fallback", stats)])
    watcher = InsightWatcher(run)
    watcher.poll()
    (finding,) = watcher.insight().findings
    assert finding.text == "ops on the CPU: aten::digamma ×2"
    quiet = make_run()
    write_runtime(quiet.hpu_metrics_path, [(T0 + 1, "cpu_fallback", {"TotalNumber": 0, "FallbackOps": {}})])
    assert ids(quiet) == []


def test_hbm_near_the_cards_total_fires_and_headroom_does_not() -> None:
    # 94.41 of 94.62 GB: the published GaudiTrainer summary (tests/insight/data/README.md)
    full = make_run()
    write_logs(full, range(1, 3), max_memory_mib=94.41 * 1024, total_memory_mib=94.62 * 1024)
    write_runtime(full.hpu_metrics_path, compiles_at([1]))
    assert ids(full) == ["hbm-full"]
    roomy = make_run()
    write_logs(roomy, range(1, 3), max_memory_mib=78.71 * 1024, total_memory_mib=94.62 * 1024)
    write_runtime(roomy.hpu_metrics_path, compiles_at([1]))
    assert ids(roomy) == []


def test_no_metrics_file_long_after_start_says_no_card() -> None:
    late = make_run(started_ago=findings.NO_METRICS_AFTER_S + 5)
    watcher = InsightWatcher(late)
    watcher.poll()
    (finding,) = watcher.insight().findings
    assert finding.id == "no-card" and "never acquired a card" in finding.text
    assert ids(make_run(started_ago=10)) == []  # still starting
    assert ids(make_run(started_ago=findings.NO_METRICS_AFTER_S + 5, device="cpu")) == []
    process_exit_only = {"PT_HPU_METRICS_DUMP_TRIGGERS": "process_exit"}  # the file comes at exit
    assert ids(make_run(started_ago=findings.NO_METRICS_AFTER_S + 5, env=process_exit_only)) == []


def test_the_bridge_banner_against_the_asked_mode() -> None:
    asked_eager = make_run(env={"PT_HPU_LAZY_MODE": "0"})
    asked_eager.log_path.write_bytes(b"starting\n" + (DATA / "bridge-banner.log").read_bytes())
    write_runtime(asked_eager.hpu_metrics_path, compiles_at([1]))
    watcher = InsightWatcher(asked_eager)
    watcher.poll()
    (finding,) = watcher.insight().findings
    assert (
        finding.text
        == "the bridge runs lazy mode (PT_HPU_LAZY_MODE = 1) but the job asked for eager (PT_HPU_LAZY_MODE=0)"
    )
    asked_lazy = make_run(env={"PT_HPU_LAZY_MODE": "1"})
    asked_lazy.log_path.write_bytes((DATA / "bridge-banner.log").read_bytes())
    write_runtime(asked_lazy.hpu_metrics_path, compiles_at([1]))
    assert ids(asked_lazy) == []


def test_a_users_own_relative_metrics_file_is_read(tmp_path: Path) -> None:
    run = make_run(env={"PT_HPU_METRICS_FILE": "out/mine.json"}, workdir=str(tmp_path))
    (tmp_path / "out").mkdir()
    write_logs(run, range(1, 3))
    write_runtime(tmp_path / "out" / "mine.json", compiles_at([1, 2]))
    watcher = InsightWatcher(run)
    watcher.poll()
    assert watcher.insight().ranks[0].graphs == 2


def test_without_a_file_rank_zeros_counts_from_the_log_stream_are_used() -> None:
    """Ray: the metrics files stay on the nodes; rank 0's callback puts its count in each log event."""
    run = make_run(target="ray")
    with run.metrics_path.open("a") as out:
        for step in range(1, 21):
            out.write(
                json.dumps({"event": "log", "step": step, "time": T0 + step, "graph_compilations": step})
                + "\n"
            )
    watcher = InsightWatcher(run)
    watcher.poll()
    insight = watcher.insight()
    assert not insight.files_found and insight.graphs_by_rank == {0: list(range(1, 21))}
    assert [f.id for f in insight.findings] == ["recompiling"]  # and no "never acquired a card"


def test_hl_smi_memory_of_the_jobs_cards_is_the_fallback() -> None:
    """A recorded Gaudi 2 table (cards 3 and 5 nearly full): used only when the log reports no memory."""
    from gaudi_tui.core.devices.parsers.parse_table import parse_table
    from tests.conftest import SAMPLES

    devices = parse_table((SAMPLES / "gaudi2-hl225-x8-1.20.0-busy-table.txt").read_text()).to_snapshot(
        "replay"
    )

    def insight_of(run: RunFolder):  # noqa: ANN202
        write_runtime(run.hpu_metrics_path, compiles_at([1]))
        watcher = InsightWatcher(run)
        watcher.poll()
        return watcher.insight(devices=devices)

    full = insight_of(make_run(cards=(3,)))
    assert full.memory_source == "hl-smi" and [f.id for f in full.findings] == ["hbm-full"]
    assert full.findings[0].text.startswith("HBM at 98 % of the card: 94.30 of 96.00 GB")
    assert insight_of(make_run(cards=(7,))).findings == []
    logged = make_run(cards=(3,))
    write_logs(logged, range(1, 3), max_memory_mib=78.71 * 1024, total_memory_mib=94.62 * 1024)
    assert insight_of(logged).memory_source == "log" and insight_of(logged).findings == []


def test_a_long_log_appended_after_the_first_read_is_read_in_slices_to_the_same_insight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What is appended after the first read (which goes back from the end, points.py) is read a slice
    at a time (never whole: a year-long run's is 200 MB), lines cut between slices joined again; the
    insight is the one a single read gives."""
    run = make_run()
    write_logs(run, range(1, 2), max_memory_mib=90_000.0, total_memory_mib=96_000.0)
    sliced = InsightWatcher(run)
    sliced.poll()
    with run.metrics_path.open("a") as out:
        for step in range(2, 201):
            line = {"event": "log", "step": step, "time": T0 + step, "loss": 1.0, "max_memory_mib": 90_000.0}
            out.write(json.dumps({**line, "total_memory_mib": 96_000.0}) + "\n")
    write_runtime(run.hpu_metrics_path, compiles_at(list(range(1, 201))))
    whole = InsightWatcher(run)
    whole.poll()
    monkeypatch.setattr(report, "LOG_SLICE_BYTES", 1000)  # a line is ~130 bytes: most are cut
    reads: list[int | None] = []
    real = AppendReader.read_lines
    monkeypatch.setattr(
        AppendReader,
        "read_lines",
        lambda self, *a, **k: reads.append(k.get("at_most")) or real(self, *a, **k),
    )
    sliced.poll()
    assert len(reads) > 20 and set(reads) == {1000}
    assert sliced.insight(now=T0 + 300) == whole.insight(now=T0 + 300)
    assert len(sliced.insight().steps) == 200


def test_a_poll_says_whether_it_read_anything() -> None:
    run = make_run()
    write_logs(run, range(1, 6))
    watcher = InsightWatcher(run)
    assert watcher.poll() is True
    assert watcher.poll() is False  # nothing appended
    write_logs(run, range(6, 7))
    assert watcher.poll() is True
    write_runtime(run.hpu_metrics_path, compiles_at([1, 2]))
    assert watcher.poll() is True  # a runtime file appeared
    assert watcher.poll() is False
