"""The runner: concurrency, order, limits ("timed out"), crashes, cancellation without orphans."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from gaudi_tui.core.doctor.checks import ALL_CHECKS, by_id
from gaudi_tui.core.doctor.model import Check, CheckResult, ok
from gaudi_tui.core.doctor.runner import run_checks
from tests.doctor.hosts import Gate, fake_dist, gaudi2_snapshot, make_ctx, probe_children

PLUGIN = by_id()["plugin.importable"]


def sleeper(seconds: float, name: str) -> Check:
    def run(ctx):
        time.sleep(seconds)
        return ok(name)

    return Check(name, name, run)


def test_results_keep_check_order_and_arrive_as_they_finish(tmp_path: Path) -> None:
    checks = [sleeper(0.3, "slow"), sleeper(0.0, "fast")]
    seen: list[str] = []
    results = run_checks(checks, make_ctx(tmp_path), on_result=lambda r: seen.append(r.id))
    assert [r.id for r in results] == ["slow", "fast"]
    assert seen == ["fast", "slow"]
    assert results[0].seconds >= 0.3


def test_checks_run_concurrently_unless_limited(tmp_path: Path) -> None:
    active, peak, lock = [0], [0], threading.Lock()

    def counted(ctx):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.1)
        with lock:
            active[0] -= 1
        return ok("counted")

    checks = [Check(f"c{i}", "counted", counted) for i in range(4)]
    barrier = threading.Barrier(4, timeout=10)
    together = [Check(f"b{i}", "all at once", lambda ctx: (barrier.wait(), ok("met"))[1]) for i in range(4)]
    assert {r.finding for r in run_checks(together, make_ctx(tmp_path))} == {"met"}
    run_checks(checks, make_ctx(tmp_path), max_parallel=1)
    assert peak[0] == 1


def test_hung_in_process_check_times_out_and_the_rest_still_report(tmp_path: Path) -> None:
    gate = Gate()
    checks = [Check("stuck", "stuck", gate), sleeper(0.0, "fine")]
    start = time.monotonic()
    results = run_checks(checks, make_ctx(tmp_path, timeout=0.5))
    gate.released.set()
    assert time.monotonic() - start < 3
    stuck, fine = results
    assert (stuck.status, stuck.finding) == ("fail", "timed out after 0.5 s")
    assert "gaudi-tui check --timeout 60" in stuck.fix
    assert fine.status == "ok"


def test_slow_habana_import_times_out_cleanly(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, {"FAKE_HPU_IMPORT_SLEEP": "60"}, timeout=1.5)
    start = time.monotonic()
    [result] = run_checks([PLUGIN], ctx)
    assert time.monotonic() - start < 6
    assert (result.status, result.finding) == ("fail", "timed out after 1.5 s")
    assert "child process, which was stopped" in result.explanation
    assert probe_children() == []


def test_crashing_check_becomes_a_failed_result(tmp_path: Path) -> None:
    [result] = run_checks([Check("broken", "broken", lambda ctx: 1 / 0)], make_ctx(tmp_path))
    assert result.status == "fail"
    assert result.finding == "the check itself failed: ZeroDivisionError: division by zero"


def test_cancel_returns_promptly_and_leaves_no_child(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, {"FAKE_HPU_IMPORT_SLEEP": "60"})
    results: list[CheckResult] = []
    seen: list[str] = []
    checks = [PLUGIN, sleeper(0, "quick")]
    runner = threading.Thread(
        target=lambda: results.extend(run_checks(checks, ctx, on_result=lambda r: seen.append(r.id)))
    )
    runner.start()
    deadline = time.monotonic() + 60
    while not (probe_children() and seen) and time.monotonic() < deadline:
        time.sleep(0.05)  # the cancel comes once the child runs and the quick check has reported
    assert probe_children(), "the probe child never started"
    assert seen == ["quick"]
    ctx.cancel.set()
    runner.join(30)  # the cancel's own bound, whatever the load: the probe child would sleep 60 s
    assert not runner.is_alive()
    assert probe_children() == []
    assert [r.id for r in results] == ["quick"]


def test_device_map_is_read_once_for_all_checks(tmp_path: Path) -> None:
    calls: list[int] = []

    def provider():
        calls.append(1)
        time.sleep(0.1)
        return gaudi2_snapshot()

    in_process = [c for c in ALL_CHECKS if not c.isolated]
    results = run_checks(in_process, make_ctx(tmp_path, snapshot_provider=provider))
    assert calls == [1]
    assert by_id().keys() >= {r.id for r in results}
    assert len(results) == len(in_process)


def test_versions_come_from_metadata_on_the_context_path(tmp_path: Path) -> None:
    site = fake_dist(tmp_path / "site", "accelerate", "1.4.0")
    assert make_ctx(tmp_path, site=[site]).version("accelerate") == "1.4.0"
    assert make_ctx(tmp_path).version("habana-torch-plugin") == "1.22.0.740"
    assert make_ctx(tmp_path, fakes=False).version("habana-torch-plugin") is None
