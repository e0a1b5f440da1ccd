"""A vLLM server on Slurm, as the batch script and the node build it (there is no vLLM and no Gaudi
node here; the loopback cluster runs `transformers serve`: tests/slurm/test_slurm_serve.py): one
task on one node holding every card of the job, the server tensor parallel over them, its address
decided on the node and read back by the panel for the current attempt only."""

from __future__ import annotations

import shlex
import socket
from dataclasses import replace
from pathlib import Path

from gaudi_tui.core.jobs.kinds import serve_cluster, serve_kind, serve_supervise
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec, from_mapping, preset
from gaudi_tui.core.jobs.targets.slurm import checks, script
from gaudi_tui.core.serve import node


def slurm_vllm_spec(**values: object) -> JobSpec:
    spec = from_mapping(
        {"serve_engine": "vllm", "target": "slurm", "slurm_cards_per_node": 4, "slurm_gres": "gpu", **values},
        base=preset("serve a model"),
    )
    return serve_kind.KIND.prepare(checks.prepare(spec))


def test_one_task_holds_the_nodes_cards_and_the_server_is_tensor_parallel_over_them(tmp_path: Path) -> None:
    spec = slurm_vllm_spec()
    assert spec.device == "hpu" and spec.serve_port == 0  # the port is chosen on the node
    run = RunFolder(tmp_path / "run-1")
    options = script.options(spec, run, 1)
    assert "--nodes=1" in options and "--ntasks-per-node=1" in options and "--gres=gpu:4" in options
    body = script.render(spec, run, 1, serve_kind.KIND.rank_argv(run, spec, None))
    srun = next(line for line in body.splitlines() if line.startswith("srun "))
    words = shlex.split(srun.removesuffix(" &"))
    assert "--ntasks-per-node=1" in words
    assert words[words.index("--") + 1 :][1:] == ["-m", serve_cluster.NODE_MODULE, "--run", str(run.path)]
    # what the node then execs, once it chose its address and port
    argv, served = serve_supervise.server(
        run.path, replace(spec, serve_host="10.1.2.3", serve_port=8000), print
    )
    assert argv[:2] == ["vllm", "serve"] and served == argv[2]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "4"
    assert argv[argv.index("--host") + 1] == "10.1.2.3" and argv[argv.index("--port") + 1] == "8000"
    assert serve_kind.KIND.rank_env(run, spec, {})["PT_HPU_LAZY_MODE"] == "0"  # the knobs reach the node


def test_a_command_job_still_starts_one_task_per_card(tmp_path: Path) -> None:
    spec = checks.prepare(from_mapping({"kind": "command", "command": "python train.py", "target": "slurm",
                                        "slurm_cards_per_node": 4, "slurm_gres": "gpu"}))  # fmt: skip
    assert "--ntasks-per-node=4" in script.options(spec, RunFolder(tmp_path / "run-2"), 1)


def test_the_node_binds_its_own_address_for_a_loopback_host_and_every_network_for_0000() -> None:
    here = socket.gethostname()  # no SLURMD_NODENAME: not on a Slurm node, its host name
    assert node.bind_and_reach("127.0.0.1", {}) == (here, here)
    assert node.bind_and_reach("0.0.0.0", {}) == ("0.0.0.0", here)
    assert node.bind_and_reach("10.1.2.3", {}) == ("10.1.2.3", "10.1.2.3")


def test_the_panel_reads_the_address_of_the_current_attempt_only(tmp_path: Path) -> None:
    node.write(tmp_path, 1, "n1", "10.1.2.3", 8000, "10.1.2.3", "demo-model")
    assert node.read(tmp_path, 2) is None  # the last attempt's server is not this one's
    found = node.read(tmp_path, 1)
    assert found is not None and found["url"] == "http://10.1.2.3:8000" and found["model"] == "demo-model"
    node.write(tmp_path, 1, "n1", "10.1.2.3", 8000, "10.1.2.3", "demo-model")  # a requeue, same address
    assert node.read(tmp_path, 1) != found  # a new start: the readiness watch probes it again
