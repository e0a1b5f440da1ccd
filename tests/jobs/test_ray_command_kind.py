"""Your own command on the Ray target, the parts that need no cluster: what is refused here, the
entry point and what it asks of a node, the mirror's marker and stop lines, the driver's check on
the node, resume from mirrored `save` events (tests/ray/test_ray_commands.py runs it on a cluster)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import control, kinds, runfolder
from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs.kinds import command_cluster
from gaudi_tui.core.jobs.outcome import error_from_log
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec, from_mapping
from gaudi_tui.core.jobs.targets.ray.checks import layout_problems
from gaudi_tui.core.jobs.targets.ray.mirror import LogMirror
from gaudi_tui.core.jobs.targets.ray.nodes import Node
from gaudi_tui.core.jobs.targets.ray.record import ClusterRecord
from gaudi_tui.core.jobs.worker.logstream import METRIC_PREFIX, STOPPED_PREFIX, WRAPPER_PREFIX
from tests.conftest import CPU, PYTHON, child_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def refused() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"  # closed again: nothing listens


def ray_command(project: Path, words: list[str], **changes: object) -> JobSpec:
    values: dict[str, object] = {
        "kind": "command",
        "command": words,
        "workdir": str(project),
        "target": "ray",
        "device": "cpu",
    }
    values.update(changes)
    return from_mapping(values)


def found(spec: JobSpec) -> dict[str, str]:
    return {p.field: p.message for p in control.check(spec, CPU)[1] if p.field != "ray_address"}


def test_what_is_refused_here_and_what_is_left_to_the_node(tmp_path: Path, refused: str) -> None:
    (tmp_path / "train.py").write_text("print('hi')\n")
    assert found(ray_command(tmp_path, ["not-on-this-host", "train.py"], ray_address=refused)) == {}
    missing = found(ray_command(tmp_path, ["python", "gone.py"], ray_address=refused))
    assert "the script gone.py is not in" in missing["command"] and "shipped to Ray" in missing["command"]
    relative = found(ray_command(tmp_path, ["python", "x.py"], ray_address=refused, ray_workdir="proj"))
    assert "not an absolute path on the cluster's nodes" in relative["ray_workdir"]
    on_cluster = ray_command(tmp_path, ["python", "x.py"], ray_address=refused, ray_workdir="/srv/proj")
    assert found(on_cluster) == {}  # a folder the nodes have: checked there
    attach = found(ray_command(tmp_path, [], ray_address=refused, log_file=str(tmp_path / "train.py")))
    assert "followed on this host" in attach["log_file"]
    secret = found(ray_command(tmp_path, ["python", "train.py"], ray_address=refused, env={"HF_TOKEN": "x"}))
    assert "look like secrets" in secret["env"]
    with (tmp_path / "data.bin").open("wb") as big:  # sparse: counted by size, costs nothing
        big.truncate((command_cluster.SHIP_LIMIT_MIB + 1) * 2**20)
    too_big = found(ray_command(tmp_path, ["python", "train.py"], ray_address=refused))
    assert "more than 100 MiB, too much to ship with a Ray job" in too_big["workdir"]
    assert "ray_workdir" in too_big["workdir"]
    assert runfolder.all_runs() == []


def test_the_entry_asks_one_node_for_every_process() -> None:
    spec = ray_command(Path("/p"), ["train.py"], command_launcher="torchrun", device="hpu", processes=2)
    entry = kinds.for_spec(spec).cluster_entry(spec)
    assert (entry.module, entry.hpus, entry.cpus) == ("gaudi_tui.core.jobs.worker.ray_command", 2, 0)
    assert entry.working_dir == "/p" and ".git/" in entry.excludes
    assert "2 process(es), torchrun, on one node; its folder /p shipped with the job" == entry.words
    there = kinds.for_spec(spec).cluster_entry(spec_mod.with_overrides(spec, ["ray_workdir=/srv/p"]))
    assert there.working_dir == "" and "in /srv/p on the node" in there.words

    def node(name: str, hpus: float, cpus: float = 1) -> Node:
        return Node(
            name * 8, "10.0.0." + name, True, False, hpu_total=8, hpu_free=hpus, cpu_total=4, cpu_free=cpus
        )

    def layout(nodes: list[Node], n: int, device: str = "hpu") -> str:
        prepared = spec_mod.with_overrides(spec, [f"workers={n}", f"processes={n}", f"device={device}"])
        return "\n".join(str(p) for p in layout_problems(prepared, nodes))  # as checks.prepare leaves it

    assert layout([node("1", 2), node("2", 2)], 2) == ""
    assert "4 HPUs on one node needed" in layout([node("1", 2), node("2", 2)], 4)
    assert "on 1, 2, 4 or 8 cards" in layout([node("1", 8)], 3)
    assert "on 1, 2, 4 or 8 cards" in layout([node("1", 8), node("2", 8)], 16)
    cpus = "2 processes on one node need 2 free CPUs there"
    assert cpus in layout([node("1", 0, cpus=1), node("2", 0, cpus=1)], 2, "cpu")
    assert layout([node("1", 0, cpus=2)], 2, "cpu") == ""


def test_the_mirror_writes_the_wrappers_marker_and_reads_the_stop(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    mirror = LogMirror(run, ClusterRecord("http://h:8265", "sid", 1))
    marker = {"pid": 7, "output_dir": "/cluster/run/work/out"}
    save = {"event": "save", "step": 8, "checkpoint": "/cluster/run/work/out/checkpoint-8"}
    mirror.feed_from(
        f"{WRAPPER_PREFIX}{json.dumps(marker)}\n{METRIC_PREFIX}{json.dumps(save)}\n{{'loss': '1.2'}}\n"
        f'{STOPPED_PREFIX}{{"signal": "SIGTERM", "exit_code": 143}}\n'
    )
    assert json.loads((run.path / "wrapper.json").read_text()) == marker
    assert mirror.stopped_by == "SIGTERM"
    assert run.log_path.read_text() == "{'loss': '1.2'}\n"
    spec = ray_command(tmp_path, ["python", "train.py"])
    kind = kinds.for_spec(spec)
    says = Path(save["checkpoint"])
    assert kind.resume_refusal(run, spec) is None
    assert kind.newest_checkpoint(run, spec, says) == says  # the cluster's path, not a listing here
    (run.path / "wrapper.json").unlink()
    assert "without the panel's Trainer callback" in str(kind.resume_refusal(run, spec))


def test_the_driver_checks_on_the_node_and_fails_with_the_error_line(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("print('hi')\n")
    spec = ray_command(tmp_path, ["no-such-launcher", "train.py"], ray_workdir=str(tmp_path))
    env = child_env(GAUDI_TUI_SPEC=spec_mod.to_toml(spec), PYTHONPATH=str(ROOT))
    argv = [
        PYTHON,
        "-m",
        "gaudi_tui.core.jobs.worker.ray_command",
        "--run-id",
        "r1",
        "--storage",
        str(tmp_path / "s"),
    ]
    done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    log = tmp_path / "job.log"
    log.write_text(done.stdout)
    error = error_from_log(log)
    assert "'no-such-launcher' is not a program on PATH" in error and "checked on the cluster's node" in error
    assert (tmp_path / "s" / "r1" / "spec.toml").is_file() and os.stat(
        tmp_path / "s" / "r1"
    ).st_mode & 0o077 == 0
