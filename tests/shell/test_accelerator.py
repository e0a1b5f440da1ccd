"""hpu → cuda → cpu selection: the pure rules, and the real probe child with and without a fake
`habana_frameworks` on its PYTHONPATH."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from gaudi_tui.core import accelerator
from gaudi_tui.core.accelerator import select
from gaudi_tui.core.childprobe import run_json_child
from tests.conftest import FAKES, child_env


def test_gaudi_settings() -> None:
    acc = select(
        {"habana_frameworks": True, "accelerate_version": "1.15.0", "hpu_available": True, "hpu_count": 8}
    )
    assert (acc.kind, acc.device_map, acc.dtype) == ("hpu", "hpu", "bfloat16")
    assert (acc.compile_backend, acc.ddp_backend, acc.launcher) == ("hpu_backend", "hccl", "accelerate")
    assert acc.device_count == 8
    assert acc.child_env([2, 3]) == {"PT_ENABLE_INT64_SUPPORT": "1", "HABANA_VISIBLE_MODULES": "2,3"}
    assert acc.child_env(compile=True)["PT_HPU_LAZY_MODE"] == "0"


def test_cuda_settings() -> None:
    acc = select({"cuda_available": True, "cuda_count": 1, "cuda_name": "NVIDIA H200", "cuda_bf16": True})
    assert (acc.kind, acc.dtype, acc.ddp_backend, acc.compile_backend) == (
        "cuda",
        "bfloat16",
        "nccl",
        "inductor",
    )
    assert "NVIDIA H200" in acc.reason
    assert acc.child_env([1]) == {"CUDA_VISIBLE_DEVICES": "1"}


def test_cpu_settings_and_reason() -> None:
    acc = select({"habana_frameworks": False, "cuda_available": False})
    assert (acc.kind, acc.dtype, acc.ddp_backend, acc.launcher) == ("cpu", "float32", "gloo", "torchrun")
    assert "habana_frameworks is not installed" in acc.reason
    assert acc.child_env([0, 1]) == {}


def test_old_accelerate_is_named_as_the_reason() -> None:
    acc = select({"habana_frameworks": True, "accelerate_version": "1.4.0", "hpu_available": False})
    assert acc.kind == "cpu"
    assert "accelerate 1.4.0 < 1.5.0" in acc.reason


def test_probe_on_this_machine_falls_back() -> None:
    acc = accelerator.probe(env=child_env())
    assert acc.kind in ("cpu", "cuda")
    assert acc.torch_version


def test_probe_with_fake_habana_frameworks_picks_gaudi() -> None:
    acc = accelerator.probe(env=child_env(PYTHONPATH=str(FAKES), FAKE_HPU_CARDS="4"))
    assert acc.kind == "hpu", acc.reason
    assert acc.device_count == 4
    assert acc.device_name == "GAUDI2"
    assert acc.compile_backend == "hpu_backend"


def test_probe_with_fake_plugin_but_no_card() -> None:
    acc = accelerator.probe(env=child_env(PYTHONPATH=str(FAKES), FAKE_HPU_CARDS="0"))
    assert acc.kind != "hpu"
    assert "torch.hpu.is_available() is False" in acc.reason


def test_probe_timeout_becomes_cpu_with_reason() -> None:
    acc = accelerator.probe(timeout=0.2, env=child_env())
    assert acc.kind == "cpu"
    assert "timed out after 0.2 s" in acc.reason


def test_probe_cancel_returns_promptly() -> None:
    cancel = threading.Event()
    cancel.set()
    started = time.monotonic()
    acc = accelerator.probe(env=child_env(), cancel=cancel)
    assert "cancelled" in acc.reason
    assert time.monotonic() - started < 2.0


def test_probe_crash_is_reported() -> None:
    acc = accelerator.probe(env=child_env(PYTHONPATH="/nonexistent", PYTHONHOME="/nonexistent"))
    assert acc.kind == "cpu"
    assert "probe failed" in acc.reason


def test_a_probe_child_runs_at_the_niceness_asked() -> None:
    seen: list[int] = []
    facts = run_json_child(
        [sys.executable, "-c", "import json, os; print(json.dumps({'nice': os.nice(0)}))"],
        timeout=30,
        nice=5,
        on_start=lambda pid: seen.append(os.getpriority(os.PRIO_PROCESS, pid)),
    )
    expected = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 5)
    assert seen == [expected]
    assert facts == {"nice": expected}


def test_the_start_up_accelerator_probe_yields_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its 4–10 s of torch imports share the cores with the user's first keys: it runs niced."""
    seen: list[int] = []

    def spy(argv: list[str], **kwargs: object) -> dict[str, object]:
        return run_json_child(
            argv, **kwargs, on_start=lambda pid: seen.append(os.getpriority(os.PRIO_PROCESS, pid))
        )

    monkeypatch.setattr(accelerator, "run_json_child", spy)
    acc = accelerator.probe(env=child_env())
    assert acc.kind in ("cpu", "cuda")
    assert seen == [min(19, os.getpriority(os.PRIO_PROCESS, 0) + accelerator.PROBE_NICE)]
