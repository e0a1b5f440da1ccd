"""Gaudi contract tests: the insight's Gaudi parts against Intel's published code (each test names its
source). This machine has no Gaudi; `tests/fakes/habana_frameworks` does on import what Intel's plugin
does (its README and module docstrings say from which file)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gaudi_tui.core.insight import profile
from tests.conftest import FAKES, PYTHON, child_env

TAKER = """\
import json, sys, time
from pathlib import Path

import pytest
import habana_frameworks.torch  # Intel's plugin: its import puts its profiler in place of torch's
import torch
from habana_frameworks.torch import activity_profiler
from habana_frameworks.torch.utils import _activity_profiler_C
from gaudi_tui.core.insight import profile

folder = Path(sys.argv[1])
taker = profile.ProfileTaker(folder, "hpu")
model = torch.nn.Linear(64, 64)
assert profile.request(folder, 3) is None
taken = None
for step in range(1, 50):
    model(torch.randn(8, 64)).relu().sum().backward()
    taken = taker.step_end(step)
    if taken is not None:
        break
print(json.dumps({"taken": taken, "seen": activity_profiler.seen, "calls": _activity_profiler_C.calls}))
"""


def take_on_fake_gaudi(tmp_path: Path) -> dict:
    done = subprocess.run(
        [PYTHON, "-c", TAKER, str(tmp_path)], env=child_env(PYTHONPATH=str(FAKES)),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_on_gaudi_the_profile_asks_for_hpu_activity_and_reads_the_device_events(tmp_path: Path) -> None:
    """Source: HabanaAI/gaudi-pytorch-bridge v1.19.0 — `activity_profiler.py` (HPU profiling is on when
    `ProfilerActivity.HPU` is among the activities, as in its own `tests/test_activity_profiler.py`:
    `activities=(ProfilerActivity.CPU, ProfilerActivity.HPU)`; the device's events are merged into the
    exported trace by `_export_logs`) and `backend/profiling/json_file_parser.cpp` /
    `trace_sources/trace_parser.cpp` (their shape: a `/device:HPU:0` process, `X` events in µs)."""
    out = take_on_fake_gaudi(tmp_path)
    (seen,) = out["seen"]
    assert seen == {
        "asked": ["HabanaProfilerActivity.CPU", "HabanaProfilerActivity.HPU"],
        "exchanged": ["ProfilerActivity.CPU", "None"],  # torch keeps its CPU; HPU is Intel's alone
        "hpu": True,
    }
    assert [name for name, _ in out["calls"]] == ["setup", "start", "stop", "export"]

    taken = out["taken"]
    assert taken["what"] == "taken" and taken["activities"] == ["CPU", "HPU"]
    trace = json.loads(Path(taken["trace"]).read_text(encoding="utf-8"))
    device = [e for e in trace["traceEvents"] if e.get("pid") == 0 and e.get("ph") == "X"]
    assert device and taken["device_us"] == pytest.approx(
        sum(e["dur"] for e in device)
    )  # not the Runtime lane
    names = {op["name"] for op in taken["top_device_ops"]}
    assert "addmm" in names and all(not n.startswith("aten::") for n in names)
    assert taken["top_ops"][0]["name"].startswith("aten::")  # torch's host ops stay torch's
    text = "\n".join(profile.lines(taken))
    assert "(CPU, HPU)" in text and "device none recorded" not in text
    assert "top device ops (Intel's device events in the trace" in text and "addmm" in text


def test_a_trace_without_a_device_process_gives_no_device_figures(tmp_path: Path) -> None:
    """Source: `trace_parser.cpp` `initLanes` names the device process `/device:HPU:0`; a CPU trace has none."""
    from gaudi_tui.core.insight.hpu_trace import device_figures

    trace = tmp_path / "cpu.json"
    trace.write_text(json.dumps({"traceEvents": [{"ph": "X", "pid": 0, "name": "aten::mm", "dur": 5}]}))
    assert device_figures(trace) is None
    (tmp_path / "bad.json").write_text("{")
    assert device_figures(tmp_path / "bad.json") is None
