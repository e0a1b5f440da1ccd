"""Gaudi contract tests: the insight's Gaudi parts against Intel's published code (each test names its
source). This machine has no Gaudi; `tests/fakes/habana_frameworks` does on import what Intel's plugin
does (its README and module docstrings say from which file)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gaudi_tui.core.insight import profile
from gaudi_tui.core.insight.compiles import GAUDI_BUCKETS, CompileFrames, findings
from gaudi_tui.core.jobs.insight import text
from tests.conftest import FAKES, PYTHON, child_env
from tests.insight.test_recorded_runs import replay, utc  # noqa: F401 - utc: an autouse fixture
from tests.insight.test_why_slow_trainer import insight_of

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


LOOP = """\
import json, sys
import torch
from gaudi_tui.core.insight.compile_watch import CompileWatch

torch._dynamo.config.recompile_limit = 8
watch = CompileWatch()
watch.start()
step_fn = torch.compile(torch.nn.Linear(8, 8), backend="eager", dynamic=False)
with open(sys.argv[1], "a") as out:
    for step in range(1, 21):
        watch.step = step
        step_fn(torch.randn(2, step + 3, 8)).sum().backward()
        for event in watch.drain():
            out.write(json.dumps(event) + "\\n")
"""
"""A real CPU loop's torch.compile events (a new length each step, limit 8), written as the callback
writes them, for the 20 steps of the recorded Gaudi run."""


def test_on_gaudi_intels_graph_count_and_torchs_compiles_stand_side_by_side_never_added() -> None:
    """Sources: Intel's runtime metrics file (`graph_compilation`, HabanaAI/gaudi-pytorch-bridge v1.19.0
    `saver.py`, replayed from tests/insight/data's recorded fake-runtime run: 20 graphs in 20 steps)
    counts the graphs Intel's backend compiles; torch's compile callbacks count dynamo's frames: two
    views of one cost (docs/runtime-metrics.md)."""
    run = replay("variable")  # recorded on CPU under the fake runtime: here it is the Gaudi job it stands for
    run.spec_path.write_text(run.spec_path.read_text().replace('device = "cpu"', 'device = "hpu"'))
    done = subprocess.run([PYTHON, "-c", LOOP, str(run.metrics_path)], env=child_env(),
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    insight = insight_of(run)

    assert insight.graphs_by_rank[0] == list(range(1, 21)) and insight.ranks[0].graphs == 20  # Intel's alone
    said = json.loads(json.dumps(insight.to_dict()))
    assert said["graphs_source"].startswith("Intel's runtime metrics file")
    torch_side = said["torch"]["torch_compile"]
    assert torch_side["source"].startswith("torch.compile")
    (frame,) = torch_side["frames"]
    assert (frame["compiles"], frame["recompile_count"], frame["limit"]) == (8, 7, 8)

    found = {f.id: f.text for f in insight.findings}
    assert (
        found["recompiling"] == "still compiling after warm-up: 10 graphs in the last 10 steps"
    )  # not 10 + torch's
    assert "still recompiles after warm-up: 3 since step 5" in found["torch-recompiling"]
    lines = text.lines(insight)
    torch_line = next(i for i, line in enumerate(lines) if line.startswith("torch.compile frame 0"))
    assert "8 compiles, 7 recompiles" in lines[torch_line]
    assert any("Intel's runtime file counts the graphs hpu_backend compiles" in line and "not added up" in line
               for line in lines)  # fmt: skip
    assert any(line.startswith("runtime metrics: ") for line in lines)
    assert any(line.startswith("compiles (rank 0): 20 graphs") for line in lines)


def test_on_gaudi_the_recompile_findings_add_intels_bucketing_advice() -> None:
    """Source: Intel's "Handling Dynamic Shapes" (docs.habana.ai/en/latest/PyTorch/Model_Optimization_PyTorch/
    Dynamic_Shapes.html): "If there is a large amount of variability in the input data, data padding
    and/or data bucketing can be used"; PT_HPU_RECIPE_CACHE_CONFIG from its Runtime_Flags page."""
    frames = CompileFrames()
    frames.apply({"event": "compile", "what": "compile", "frame": "0", "step": 1, "seconds": 0.1})
    for step, (was, now) in enumerate([(4, 5), (5, 6), (6, 7)], start=6):
        reason = f"tensor 'args[0]' size mismatch at index 1. expected {was}, actual {now}"
        frames.apply({"event": "compile", "what": "compile", "frame": "0", "step": step, "reason": reason})
    frames.apply({"event": "compile", "what": "limit", "frame": "0", "step": 9, "limit": 8, "reason": reason})
    on_gaudi = {f.id: f.fix for f in findings(frames, warmup_end=5, hpu=True)}
    elsewhere = {f.id: f.fix for f in findings(frames, warmup_end=5, hpu=False)}
    assert set(on_gaudi) == set(elsewhere) == {"compile-limit", "torch-recompiling", "should-be-dynamic"}
    for finding_id, fix in on_gaudi.items():
        assert fix == elsewhere[finding_id] + GAUDI_BUCKETS
    assert "'Handling Dynamic Shapes'" in GAUDI_BUCKETS and "data bucketing" in GAUDI_BUCKETS
    assert "PT_HPU_RECIPE_CACHE_CONFIG" in GAUDI_BUCKETS and "Intel" not in "".join(elsewhere.values())
