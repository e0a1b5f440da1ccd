"""The Ray target's pure parts: the log-stream mirror and Intel's layout rules (no cluster needed;
tests/ray runs the real cluster)."""

from __future__ import annotations

import json
from pathlib import Path

from gaudi_tui.core.jobs.outcome import cause_line, error_from_log
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.targets.ray.checks import layout_problems
from gaudi_tui.core.jobs.targets.ray.mirror import LogMirror
from gaudi_tui.core.jobs.targets.ray.nodes import Node
from gaudi_tui.core.jobs.targets.ray.record import ClusterRecord
from gaudi_tui.core.jobs.worker.logstream import METRIC_PREFIX, RANK_PREFIX
from tests.jobs.conftest import DATA, tiny


def test_the_mirror_splits_metrics_ranks_and_log_across_chunk_boundaries(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    mirror = LogMirror(run, ClusterRecord("http://h:8265", "sid", 1))
    event = json.dumps({"event": "log", "step": 3, "loss": 1.5})
    stream = (
        "\x1b[36m(RayTrainWorker pid=7)\x1b[0m hello\n"
        f"(RayTrainWorker pid=7) {RANK_PREFIX}"
        + json.dumps({"rank": 1, "node_id": "n1", "node_ip": "10.0.0.2"})
        + "\n"
        f"(RayTrainWorker pid=7) {METRIC_PREFIX}{event}\n"
        f"(RayTrainWorker pid=7) {METRIC_PREFIX}{event}\n"  # Ray forwarded the same line twice
        "last line without newline"
    )
    for i in range(0, len(stream), 7):  # chunks cut anywhere, as a websocket delivers them
        mirror.feed_at(i, stream[i : i + 7])
    assert run.metrics_path.read_text().splitlines() == [event]
    assert run.log_path.read_text() == "(RayTrainWorker pid=7) hello\n"
    mirror.feed_from(stream + "\nmore\n")  # the full log (get_job_logs) adds only what is new
    mirror.flush_partial()
    assert run.log_path.read_text().splitlines()[1:] == ["last line without newline", "more"]
    assert mirror.ranks == {"1": {"node_id": "n1", "node_ip": "10.0.0.2"}}


def host(name: str, free: float, total: float = 8) -> Node:
    return Node(
        name * 8, "10.0.0." + name, True, False, hpu_total=total, hpu_free=free, cpu_total=8, cpu_free=8
    )


def problems(nodes: list[Node], **changes: object) -> str:
    spec = tiny(target="ray", device="hpu", **changes)
    return "\n".join(str(p) for p in layout_problems(spec, nodes))


def test_intels_rules_on_an_hpu_cluster() -> None:
    two_hosts = [host("1", 8), host("2", 8)]
    assert problems(two_hosts, workers=8) == ""
    assert problems(two_hosts, workers=16) == ""  # two whole hosts
    assert problems(two_hosts, workers=4, hpus_per_worker=2) == ""
    assert "within one host a job uses 1, 2, 4 or 8 cards" in problems(two_hosts, workers=6)
    assert "whole hosts of 8 cards" in problems(two_hosts, workers=12)
    assert "use one of 1, 2, 4, 8" in problems(two_hosts, hpus_per_worker=3)
    busy = [host("1", 8), host("2", 6)]
    message = problems(busy, workers=16)
    assert "need 2 whole hosts with all 8 cards free, found 1" in message
    assert "10.0.0.1 (11111111) 8/8, 10.0.0.2 (22222222) 6/8" in message
    assert "4 HPUs on one host needed" in problems([host("1", 2), host("2", 2)], workers=4)


def test_a_cluster_without_hpus_runs_on_cpus() -> None:
    cpus = [Node("a" * 8, "10.0.0.1", True, True, cpu_total=4, cpu_free=1)]
    assert "has no HPUs" in problems(cpus, workers=1)
    assert "2 workers need 2 free CPUs; free CPUs per node: 10.0.0.1 (aaaaaaaa) 1/4" in "\n".join(
        str(p) for p in layout_problems(tiny(target="ray", workers=2), cpus)
    )


def test_a_blip_loses_no_line_and_the_supervisors_notes_stay_apart(tmp_path: Path) -> None:
    """The stream stops mid-line; the supervisor notes the blip; the whole log is fetched again and
    a new stream replays it from the start: every line once, the note on its own line."""
    run = RunFolder(tmp_path)
    mirror = LogMirror(run, ClusterRecord("http://h:8265", "sid", 1))
    events = [json.dumps({"event": "log", "step": s}) for s in range(1, 5)]
    log = "".join(f"{METRIC_PREFIX}{e}\n" for e in events) + "rank 0 says bye\n"
    cut = log.index('step": 3') + 4
    mirror.feed_at(0, log[:cut])  # the stream, until the tunnel dropped
    mirror.note("the Ray cluster does not answer; trying again")
    mirror.feed_from(log[: cut + 10])  # the whole log, fetched once it answered
    mirror.feed_at(0, log)  # a new stream: from the start of the log
    mirror.feed_at(cut, log[cut:])  # the old stream, unfrozen
    mirror.flush_partial()
    assert run.metrics_path.read_text().splitlines() == events
    assert run.log_path.read_text().splitlines() == [
        "[gaudi-tui] the Ray cluster does not answer; trying again",
        "rank 0 says bye",
    ]


def test_a_failed_jobs_error_is_the_cause_under_rays_wrapper(tmp_path: Path) -> None:
    log = DATA / "logs" / "ray-hpu-unavailable.log"
    assert "ControllerError: Training failed due to controller error:" in log.read_text()
    cause = "RuntimeError: Using HPUTorchDeviceManager but torch hpu is not available."
    assert error_from_log(log) == cause
    assert cause_line(log.read_text().split("ray.train.", 1)[1]) == cause
    assert cause_line("ValueError: bad value\nmore") == "ValueError: bad value"
