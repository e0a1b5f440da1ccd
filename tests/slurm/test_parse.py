"""The parsers against real Slurm 22.05.8 outputs (tests/data/slurm/, see its README)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gaudi_tui.core.slurm import gres, hostlist, model, reasons
from gaudi_tui.core.slurm.cli import Slurm, SlurmError

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def jobs(name: str) -> dict[int, model.QueueJob]:
    return {j.job_id: j for j in model.jobs_from_json(load(name))}


def test_hostlists() -> None:
    assert hostlist.expand("n[1-2]") == ["n1", "n2"]
    assert hostlist.expand("gpu[08-10],login,a[1,3-4]b") == [
        "gpu08",
        "gpu09",
        "gpu10",
        "login",
        "a1b",
        "a3b",
        "a4b",
    ]
    assert hostlist.expand("") == [] and hostlist.expand("None assigned") == []


def test_queue_states_cards_and_exit_codes() -> None:
    q = jobs("squeue_all.json")
    assert [q[i].state for i in range(1, 10)] == [
        "COMPLETED", "FAILED", "CANCELLED", "RUNNING", "RUNNING", "RUNNING", "PENDING", "PENDING", "PENDING",
    ]  # fmt: skip
    assert q[2].exit_status == 3 and q[2].exit_signal is None  # raw wait status 768
    assert q[3].exit_signal == 15 and q[3].exit_status is None
    assert (q[4].nodes, q[4].cards_per_node, q[4].cards_by_node) == (("n1",), 8, {"n1": tuple(range(8))})
    assert (q[5].cards_per_node, q[5].gres_name, q[5].cards_by_node) == (4, "gpu", {"n2": (0, 1, 2, 3)})
    assert q[6].time_limit_min == 1 and q[4].time_limit_min is None  # null = UNLIMITED
    assert q[6].time_left(now=q[6].start_time + 20) == 40
    assert q[4].elapsed(now=q[4].start_time + 5) == 5 and q[7].elapsed() is None
    assert not q[1].active and q[7].active
    # the unexpanded pattern, expanded as Slurm does; --wrap jobs without -o use slurm-%j.out
    assert q[4].stdout_path() == "/tmp/slurm-lab/out/run_n1_8-4.out"
    assert q[1].stdout_path() == "/tmp/slurm-lab/slurm-1.out"


def test_unlimited_time_limit_and_multinode_gres_detail() -> None:
    q = jobs("squeue_array_multinode_running.json")
    multi = q[3]
    assert multi.nodes == ("n1", "n2") and multi.cards == 6
    assert multi.cards_by_node == {"n1": (4, 5, 6), "n2": (0, 1, 2)}
    assert multi.time_limit_min is None  # 525600 = UNLIMITED
    assert (q[4].label, q[5].label, q[1].label) == ("2_0", "2_1", "1")  # task 0 of array 2 is "2_0", not "4"
    assert q[2].label == "2_[2-3%2]" and q[2].reason == "JobArrayTaskLimit"
    assert q[5].stdout_path() == "/tmp/slurm-lab/c10/arr-2_1.out"


def test_pending_reasons_in_words() -> None:
    q = jobs("squeue_all.json")
    assert reasons.pending_words(q[7]) == "waiting for 8 free cards on partition main"
    assert reasons.pending_words(q[8]) == "held by its user (release it with `scontrol release 8`)"
    assert reasons.pending_words(q[9]).startswith("waiting for its dependency (")
    requeued = jobs("squeue_after_node_fail.json")
    assert requeued[22].restarts == 1 and requeued[22].reason == "BeginTime"
    assert "requeued" in reasons.pending_words(requeued[22], now=requeued[22].submit_time)
    two = model.QueueJob(**{**requeued[22].__dict__, "reason": "Resources", "cards_per_node": 8})
    assert reasons.pending_words(two) == "waiting for 2 nodes with 8 free cards each on partition main"
    failed = jobs("squeue_json_node_fail_scontrol_down.json")[1]
    assert reasons.state_words(failed) == "node_fail (signal 15)"


def test_nodes_cards_and_health() -> None:
    nodes = {n.name: n for n in model.nodes_from_json(load("sinfo.json"))}
    assert (nodes["n1"].cards_total, nodes["n1"].cards_used, nodes["n1"].cards_free) == (8, 8, 0)
    assert (nodes["n2"].cards_used, nodes["n2"].cards_free, nodes["n2"].partitions) == (4, 4, ("main",))
    assert nodes["n1"].gres_types() == (("gpu", "gaudi2"),)
    drain = {n.name: n for n in model.nodes_from_json(load("sinfo_json_draining_down.json"))}
    assert not drain["n1"].usable and drain["n1"].cards_free == 0 and drain["n1"].reason == "maint-test"
    assert drain["n1"].state_words == "mixed, draining" and drain["n2"].cards_free == 8
    down = {n.name: n for n in model.nodes_from_json(load("sinfo_node_down.json"))}
    assert down["n2"].state_words == "down, not responding" and down["n2"].reason == "Not responding"
    assert down["n2"].cards_free == 0 and down["n2"].cards_used == 0


def test_gres_strings() -> None:
    assert gres.parse_gres("gpu:gaudi2:3(IDX:4-6)") == [gres.Gres("gpu", "gaudi2", 3, (4, 5, 6))]
    assert gres.parse_gres("gres:gpu:8") == [gres.Gres("gpu", None, 8)]
    assert gres.parse_gres("hpu:gaudi2:2(IDX:0,3),gpu:1") == [
        gres.Gres("hpu", "gaudi2", 2, (0, 3)), gres.Gres("gpu", None, 1),
    ]  # fmt: skip
    assert gres.parse_gres("gpu:gaudi2:0(IDX:N/A)") == [gres.Gres("gpu", "gaudi2", 0)]
    assert gres.parse_gres("(null)") == []


def test_scontrol_lines_keep_spaces_in_values() -> None:
    shown = [model.shown_job(line) for line in (DATA / "scontrol_show_job_o.txt").read_text().splitlines()]
    by_id = {s.job_id: s for s in shown if s}
    assert set(by_id) == set(range(1, 10))
    assert by_id[4].stdout == "$LAB/out/run_n1_8-4.out" and by_id[4].state == "RUNNING"
    assert by_id[2].exit_code == "3:0" and by_id[7].reason == "Resources"
    fields = model.parse_show_line((DATA / "scontrol_show_job_o.txt").read_text().splitlines()[3])
    assert fields["Command"] == "$LAB/jobs/sleep.sh 900" and fields["WorkDir"] == "$LAB"
    args = model.parse_show_line("JobId=5 Command=/a/run.sh lr=3 x WorkDir=/a StdOut=/a/o")
    assert args["Command"] == "/a/run.sh lr=3 x" and args["StdOut"] == "/a/o"


def test_sacct_text_has_the_real_exit_codes() -> None:
    records = {r.job_id: r for r in model.parse_sacct((DATA / "sacct_dbd_plain.txt").read_text())}
    assert set(records) == {"1", "2", "3", "4", "5"}  # job lines only, no steps, no header
    assert (records["2"].state, records["2"].exit_code) == ("FAILED", "3:0")
    assert records["3"].state == "CANCELLED" and records["4"].nodes == ("n1", "n2")


def _fake_tool(tmp_path: Path, name: str, script: str) -> dict[str, str]:
    import os

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / name
    tool.write_text("#!/bin/sh\n" + script)
    tool.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_controller_down_json_is_an_error_not_an_empty_queue(tmp_path: Path) -> None:
    # squeue --json of 22.05 exits 0 with an `errors` entry when slurmctld is dead (the real output)
    env = _fake_tool(tmp_path, "squeue", f"cat {DATA / 'squeue_json_ctld_down.json'}\n")
    env = _fake_tool(tmp_path, "sinfo", f"cat {DATA / 'sinfo_json_ctld_down.json'}\n")
    slurm = Slurm(env=env)
    for call in (slurm.squeue, slurm.sinfo):
        with pytest.raises(SlurmError) as caught:
            call()
        assert caught.value.kind == "controller" and caught.value.unreachable
    from gaudi_tui.core.slurm import poll

    snap = poll.take(slurm)
    assert snap.error and "did not answer" in snap.error and snap.jobs == ()


def test_a_hanging_tool_is_cut_at_its_limit(tmp_path: Path) -> None:
    env = _fake_tool(tmp_path, "squeue", "sleep 30\n")
    with pytest.raises(SlurmError) as caught:
        Slurm(env=env, timeout=0.5).squeue()
    assert caught.value.kind == "timeout" and "0.5 s" in str(caught.value)
    with pytest.raises(SlurmError) as missing:
        Slurm(env={"PATH": str(tmp_path / "none")}).squeue()
    assert missing.value.kind == "missing"


# One supervisor's poll, in a process of its own: it asks three times at the clock given.
POLLER = """
import sys
from pathlib import Path
from gaudi_tui.core.slurm.cli import Slurm
from gaudi_tui.core.slurm.poll import QueuePoll
cache, now, path = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
poll = QueuePoll(Slurm(env={"PATH": path}), max_age=30.0, cache=cache, clock=lambda: now)
print(*(poll.get().job(4).state for _ in range(3)), poll.get().job(7).reason, poll.get().job(11).name)
"""


SAID = "RUNNING RUNNING RUNNING DependencyNeverSatisfied new\nline|x"


def test_one_call_serves_every_caller_across_processes(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    # slow enough that the four pollers, started together, all ask while the first call runs
    # it prints the real recorded text form with the separator it was asked for (squeue --json: JSON)
    recorded, sep = DATA / "squeue_fields.txt", "|5eb2a0c4d19f7e38|"
    env = _fake_tool(
        tmp_path,
        "squeue",
        f'echo x >> {calls}\nsleep 0.5\nargs="$*"\ncase "$args" in *--json*) cat {DATA / "squeue_all.json"}; exit;; esac\n'
        f'sep=${{args#*--Format=JobID:0}}\nsep=${{sep%%,*}}\nsed "s#{sep}#$sep#g" {recorded}\n',
    )
    cache = tmp_path / "queue.json"

    def pollers(now: float) -> list[str]:
        started = [
            subprocess.Popen(
                [sys.executable, "-c", POLLER, str(cache), str(now), env["PATH"]],
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        return [p.communicate(timeout=60)[0].strip() for p in started]

    assert pollers(1000.0) == [SAID] * 4
    assert calls.read_text().count("x") == 1 and _taken(cache) == 1000.0
    # still fresh: no call (max_age 30 s: the snapshot's real monotonic age, which the fake clock
    # cannot hold back, stays under it however slowly the second four start)
    assert pollers(1010.0) == [SAID] * 4
    assert calls.read_text().count("x") == 1
    assert pollers(1040.0) == [SAID] * 4  # older than max_age: one more
    assert calls.read_text().count("x") == 2


def _taken(cache: Path) -> float:
    return float(json.loads(cache.read_text())["taken"])


def test_the_command_says_why_when_slurm_cannot_be_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gaudi_tui.cli import main

    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm-here"))
    assert main(["slurm", "queue"]) == 2
    assert "Slurm's client tools are not installed here (squeue not found on PATH)" in capsys.readouterr().err
    env = _fake_tool(tmp_path, "sinfo", f"exec /bin/cat {DATA / 'sinfo_json_ctld_down.json'}\n")
    monkeypatch.setenv("PATH", env["PATH"])
    assert main(["slurm", "nodes", "--json"]) == 2
    assert "the Slurm controller did not answer" in capsys.readouterr().err
