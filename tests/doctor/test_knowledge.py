"""The knowledge base: every entry matched by the real error text it was written for.

Texts are copied from where they were reported (the source is named next to each); where only
a format string was published, the text is that format filled in, and the comment says so.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gaudi_tui.core.doctor.checks import by_id
from gaudi_tui.core.doctor.knowledge import explain, job_logs, load, parse, read_log_tail
from tests.conftest import SAMPLES

REAL_ERRORS: dict[str, list[str]] = {
    # huggingface/tgi-gaudi#93
    "device-already-acquired": [
        "RuntimeError: synStatus=20 [Device already acquired] Device acquire failed."
    ],
    # huggingface/optimum-habana#1611, HabanaAI/vllm-fork#344
    "device-acquire-generic-failure": ["RuntimeError: synStatus=26 [Generic failure] Device acquire failed."],
    # HabanaAI/hccl_demo#44
    "hccl-invalid-server-type": [
        "/qigeng/HCL/hcl/src/platform/gaudi_common/hcl_device_control_factory.cpp::71(initDevice): The condition "
        "[ false ] failed. Invalid server type (4[OCP1]) requested to generate controller.\n"
        "HCCL demo error: In function initDevice(): synDeviceAcquire(&resources.deviceHandle, nullptr) failed "
        "with synapse error: 20"
    ],
    # aidotse/LeakPro#425
    "device-not-found": ["RuntimeError: synStatus=8 [Device not found] Device acquire failed."],
    # HabanaAI/vllm-fork#484
    "graph-compile-failed": ["RuntimeError: Graph compile failed. synStatus=synStatus 26 [Generic failure]."],
    # the graph compiler's format "Failed to load tpc kernel for node: {}, GUID: {}. Got error: {}", filled in
    "tpc-kernel-load-failed": [
        "Failed to load tpc kernel for node: gather_fwd_i64_n12, GUID: gather_fwd_i64. Got error: GLUE_FAILED"
    ],
    # hiyouga/LlamaFactory#7275; huggingface/transformers#36424
    "node-create-failed": [
        "[rank2]: RuntimeError: synNodeCreateWithId failed for node: batch_gemm with synStatus 26 [Generic failure]. .",
        "synNodeCreateWithId failed for node: masked_fill_fwd_i64 with synStatus 26 [Generic failure]",
    ],
    # huggingface/optimum-habana#2089
    "long-to-int-cast": [
        "RuntimeError: Error when trying to cast Long to Int, Input values range [9223372036854775807, "
        "9223372036854775807] exceeds Int range [-2147483648, 2147483647]"
    ],
    # HabanaAI vLLM FP8 calibration READMEs
    "devmem-oom": [
        "RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::939524096 (896)MB",
        "RuntimeError: [Rank:3] FATAL ERROR :: MODULE:PT_DEVMEM PT_DEVMEM OOM: No enough memory for defragment.",
    ],
    # vllm-project/vllm#10897
    "lazy-collectives": ["AssertionError: collective nonSFG is not supported during hpu graph capturing"],
    # ray-project/ray serve tutorial log; huggingface/optimum-habana#2231 log
    "version-skew": [
        "(ServeReplica:default:LlamaModel pid=17272) [WARNING|utils.py:198] 2024-02-01 05:38:48,700 >> "
        "optimum-habana v1.11.0.dev0 has been validated for SynapseAI v1.14.0 but the driver version is v1.15.0, "
        "this could lead to undefined behavior!",
        "optimum-habana v1.21.0.dev0 has been validated for SynapseAI v1.22.0 but habana-frameworks v1.21.0.555 "
        "was found, this could lead to undefined behavior!",
    ],
    # Lightning-Universe/lightning-transformers#282
    "no-habana-frameworks": [
        "ModuleNotFoundError: No module named 'habana_frameworks.torch'",
        "ModuleNotFoundError: No module named 'habana_frameworks'",
    ],
    # optimum-habana transformers/training_args.py
    "dynamo-and-lazy": ["AssertionError: Dynamo and lazy are mutually exclusive."],
    "eager-mode-not-set": [
        "ValueError: Lazy mode or compile mode not enabled => eager mode should be enabled using PT_HPU_LAZY_MODE=0"
    ],
    "hpu-graphs-in-eager": [
        "ValueError: `--use_hpu_graphs_for_inference` and `--use_hpu_graphs_for_training` cannot be used in "
        "eager mode. Please set `--use_lazy_mode` to True."
    ],
    # torch/_dynamo/exc.py InvalidBackend; forum.habana.ai thread title
    "invalid-hpu-backend": [
        "torch._dynamo.exc.InvalidBackend: Invalid backend: 'hpu_backend', see `torch._dynamo.list_backends()` "
        "for available backends.",
        "hpu_backend not found on torch.compile",
    ],
    # `pip list` in bitsandbytes-foundation/bitsandbytes#1530; `pip freeze` form
    "accelerate-too-old": [
        "absl-py                            1.4.0\naccelerate                         1.3.0\naiohappyeyeballs                   2.4.6",
        "habana-torch-plugin==1.19.0.561\naccelerate==1.4.0\n",
    ],
    # gaudi_tui/data/hl-smi/ (read below)
    "hlsmi-processes-na": [],
    # torch/_dynamo/convert_frame.py warning format, filled in
    "recompile-limit": [
        "W1129 torch/_dynamo/convert_frame.py:1995] torch._dynamo hit config.recompile_limit (8)\n"
        "   function: 'forward' (/models/qwen3/modeling_qwen3.py:388)\n"
        "   last reason: 0/7: tensor 'input_ids' size mismatch at index 1. expected 96, actual 103"
    ],
    # bitsandbytes-foundation/bitsandbytes#2041 (faulthandler dump)
    "bnb-pip-list-hang": [
        '  File "subprocess.py", line 1209 in communicate\n  File "subprocess.py", line 550 in run\n'
        '  File "bitsandbytes/backends/utils.py", line 71 in get_gaudi_sw_version'
    ],
    # bitsandbytes backends/hpu/ops.py
    "bnb-fp4-on-hpu": ["ValueError: HPU backend only supports quant_type 'nf4', got 'fp4'"],
    # libfabric src/hmem_synapseai.c message, in libfabric's FI_WARN line format
    "hccl-scaleout-host-nic": [
        "libfabric:2593:1727430112::core:core:synapseai_dl_init():96<warn> Failed to find hcclLookupDMABuff"
    ],
    # habana-pyhlml 1.24.2.481 hlmlInit() on a host without Gaudi (docs/hl-smi-facts.md)
    "hlml-not-loaded": ["Failed to load libhlml"],
    # HabanaAI/habana-container-runtime discover/discover.go
    "no-habanalabs-devices": ["no habanalabs devices found. driver might not be loaded"],
    # HabanaAI/Setup_and_Install#1 kernel log
    "device-not-usable": [
        "[   72.993204] habanalabs hl2: failed to initialize the H/W\n"
        "[   72.993269] habanalabs 0000:1a:00.0: Failed to initialize hl2. Device is NOT usable !"
    ],
    # vLLM Gaudi installation docs
    "unknown-runtime-habana": ["docker: Error response from daemon: Unknown runtime specified habana."],
    # huggingface/optimum-habana#1779 (multi-node DeepSpeed launch, lines prefixed by host)
    "multinode-graph-compile": [
        "100.83.191.29: [rank14]:     work = default_pg.broadcast([tensor], opts)\n"
        "100.83.191.29: [rank14]: RuntimeError: Graph compile failed. synStatus=synStatus 26 [Generic failure]."
    ],
    # vllm-project/vllm-gaudi#946
    "visible-modules-out-of-range": [
        "RuntimeError: Invalid HABANA_VISIBLE_MODULES=5. Module IDs should be between 0 and 0."
    ],
    # HabanaAI/vllm-fork#297
    "ray-hpu-resource-name": [
        "ValueError: The number of required hpus exceeds the total number of available hpus in the placement group"
    ],
    # Ray 2.60 Train worker given fake HPU resources on a CPU node (reproduced for this project)
    "ray-hpu-without-torch-hpu": [
        "(TrainController pid=10647) RuntimeError: Using HPUTorchDeviceManager but torch hpu is not available."
    ],
    # Ray 2.60, the same job: the line Ray prints above the cause (tests/jobs/data/logs)
    "ray-controller-error": ["ray.train.ControllerError: Training failed due to controller error:"],
    # gaudi-tui's own words for a dashboard that refuses or never answers (tests/ray/test_ray_faults.py)
    "ray-dashboard-unreachable": [
        "may still run (cannot read the state of gaudi-tui-x-a1 at http://127.0.0.1:8265: the Ray dashboard "
        "did not answer in 10 s (a frozen tunnel?))",
        "cannot reach the Ray cluster at http://127.0.0.1:8265 (Connection refused)",
    ],
    # Ray 2.60 get_job_info for a submission the cluster does not have, in gaudi-tui's words
    "ray-job-not-known": [
        "Ray job gaudi-tui-x-a1 is no longer known to the cluster at http://127.0.0.1:8265 (its head "
        "restarted, or the job was deleted)"
    ],
    # reproduced on a CPU machine
    "bf16-without-hpu": [
        "ValueError: Your setup doesn't support bf16/gpu. You need to assign use_cpu if you want to train the model on CPU."
    ],
}
# The card network and HCCL across hosts. huggingface/optimum-habana#505 (multi-node Ray Train, Gaudi 2)
REAL_ERRORS["hccl-collective-failed"] = [
    "(RayTrainWorker pid=19045) [2023-11-02 13:17:59,227 E 19045 21937] logging.cc:97: Unhandled exception: "
    "N3c105ErrorE. what(): Collective call returned error\n"
    "(RayTrainWorker pid=19045) Exception raised from operator() at /npu-stack/pytorch-integration/"
    "python_packages/habana_frameworks/torch/distributed/hccl/process_group_hccl_base.cpp:286 (most recent call first):"
]
# HabanaAI/HCL 1.21.0 format strings (hcl_idevice.cpp allocateQp, gen2_arch_common/hcl_device.cpp), filled in
REAL_ERRORS["hccl-nic-down"] = ["Nic(8) is DOWN, can't allocate connection", "NIC 22 is down"]
# HabanaAI/HCL 1.21.0 hccl_communicator.cpp, its format filled in
REAL_ERRORS["hccl-scaleout-unavailable"] = [
    "Comm 0 Scale-out is not available and communicator requires scale-out."
]
# HabanaAI/hccl_demo#46
REAL_ERRORS["hccl-internal-check"] = [
    "/".join(
        ("", "home", "jenkins", "workspace", "cdsoftwarebuilder", "create-binaries-from-sw-sources---bp-dt")
    )
    + "/repos/hcl/src/platform/"
    "gen2_arch_common/credit_manager.cpp:31(allocNextCredit): The condition [ prevTargetValue != targetValue ] "
    "failed. No available intermediate buffer\n"
    "HCCL demo error: In function hcclAllReduceWrapper(): hcclAllReduce(sendbuff, recvbuff, recvcount, "
    "getDataType(envData), getReductionOp(envData), resources.comm, resources.collectiveStream) failed: A device "
    "is busy or an internal check failed"
]
# HabanaAI/hccl_demo#47 (8 × Gaudi 3 PCIe), verbatim
REAL_ERRORS["gaudi-nics-not-detected"] = [
    "# /opt/habanalabs/qual/gaudi3/bin/manage_network_ifs.sh --status\naccel0\nno interfaces were detected\n"
    "accel1\nno interfaces were detected",
    "# /opt/habanalabs/qual/gaudi3/bin/manage_network_ifs.sh --up\nWarning: no habanalabs network interfaces were detected",
]
# manage_network_ifs.sh's `--status` lines (HabanaAI/Setup_and_Install a0c317a), its echo filled in
REAL_ERRORS["gaudi-ports-down-status"] = [
    "accel3\n21 ports up (0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11)\n1 ports down (8)"
]
# made-gaudi2-x8-nic-link-card3-port8-down.txt: the real `-n link` format with a port DOWN (made from docs)
REAL_ERRORS["hlsmi-link-down"] = [(SAMPLES / "made-gaudi2-x8-nic-link-card3-port8-down.txt").read_text()]
REAL_ERRORS["hlsmi-processes-na"] = [(SAMPLES / "gaudi2-hl225-x8-1.20.0-busy-table.txt").read_text()]
# mila-iqia/milabench#300 (torch.compile on Gaudi, llava-single), the line as reported
REAL_ERRORS["launch-recipe-failed"] = ["Habana exception raised from LaunchRecipe at graph_exec.cpp:440"]
# HabanaAI/vllm-fork#511, verbatim
REAL_ERRORS["vllm-gaudi-architecture"] = [
    "ValueError: Model architectures ['GaudiLlamaForCausalLM'] are not supported for now."
]
CASES = [(entry_id, text) for entry_id, texts in REAL_ERRORS.items() for text in texts]


def test_every_entry_has_a_real_error_and_a_known_check() -> None:
    entries = load()
    assert len(entries) >= 17
    assert {e.id for e in entries} == set(REAL_ERRORS)
    checks = by_id()
    for entry in entries:
        assert entry.check in checks, entry.id
        assert entry.source and entry.cause and entry.fix


@pytest.mark.parametrize(("entry_id", "text"), CASES, ids=[f"{i}-{n}" for n, (i, _) in enumerate(CASES)])
def test_real_error_is_explained(entry_id: str, text: str) -> None:
    matches = explain(text)
    assert entry_id in [m.entry.id for m in matches]
    match = next(m for m in matches if m.entry.id == entry_id)
    assert match.line in text
    assert match.line_number == text[: text.index(match.line)].count("\n") + 1


def test_ordinary_training_log_matches_nothing() -> None:
    log = (
        "{'loss': 5.4812, 'grad_norm': 2.91, 'learning_rate': 4.9e-05, 'epoch': 0.05}\n"
        "100%|██████████| 200/200 [00:07<00:00, 27.41it/s]\n"
        "{'train_runtime': 7.3, 'train_samples_per_second': 437.1, 'epoch': 1.0}\n"
        "accelerate                         1.15.0\n"
    )
    assert explain(log) == []


def test_matches_come_in_log_order_with_counts() -> None:
    log = (
        "step 1\n"
        "RuntimeError: Error when trying to cast Long to Int, Input values range [0, 9223372036854775807] exceeds "
        "Int range [-2147483648, 2147483647]\n"
        "RuntimeError: synStatus=20 [Device already acquired] Device acquire failed.\n"
        "RuntimeError: synStatus=20 [Device already acquired] Device acquire failed.\n"
    )
    matches = explain(log)
    assert [(m.entry.id, m.line_number, m.count) for m in matches] == [
        ("long-to-int-cast", 2, 1),
        ("device-already-acquired", 3, 2),
    ]
    assert matches[1].to_json()["check"] == "cards.busy"


def test_incomplete_or_broken_entries_are_refused() -> None:
    with pytest.raises(ValueError, match=r"entry 1 \(x\) lacks cause, fix"):
        parse('[[entry]]\nid = "x"\ntitle = "t"\npattern = "p"\nsource = "s"\ncheck = "c"\n')
    with pytest.raises(ValueError, match="entry x: bad pattern"):
        parse(
            '[[entry]]\nid="x"\ntitle="t"\npattern="(unclosed"\ncause="c"\nfix="f"\nsource="s"\ncheck="c"\n'
        )


def test_log_tail_reads_only_the_end(tmp_path: Path) -> None:
    log = tmp_path / "stdout.log"
    log.write_bytes(b"old line\n" * 1000 + b"RuntimeError: synStatus=8 [Device not found] \xff\n")
    tail = read_log_tail(log, limit=100)
    assert len(tail.encode()) <= 102
    assert tail.endswith("[Device not found] \ufffd\n")
    assert [m.entry.id for m in explain(tail)] == ["device-not-found"]


def test_job_logs_are_listed_newest_first(tmp_path: Path) -> None:
    for age, run in enumerate(["20261129-100000-new", "20261128-090000-old"]):
        (tmp_path / run).mkdir()
        (tmp_path / run / "stdout.log").write_text("x")
        os.utime(tmp_path / run / "stdout.log", (1_800_000_000 - age * 60, 1_800_000_000 - age * 60))
    (tmp_path / "no-log-yet").mkdir()
    assert [p.parent.name for p in job_logs(tmp_path)] == ["20261129-100000-new", "20261128-090000-old"]
