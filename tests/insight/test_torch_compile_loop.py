"""A plain training loop under torch.compile on CPU (a real run, backend="eager", in its own process
so dynamo's settings stay there), fed a new sequence length each step with dynamic=False and
recompile_limit=2: `CompileWatch` reports each compile with its step, the guard that failed in
words, and the frame that hit the limit and runs uncompiled since; the findings say what to do."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gaudi_tui.core.insight.compiles import CompileFrames, findings, guard_words
from gaudi_tui.core.insight.events import WhySlow
from tests.conftest import PYTHON, child_env

LOOP = """\
import json, sys
import torch
from gaudi_tui.core.insight.compile_watch import CompileWatch

torch._dynamo.config.recompile_limit = 2
watch = CompileWatch()
watch.start()
model = torch.nn.Linear(8, 8)
step_fn = torch.compile(model, backend="eager", dynamic=False)
with open(sys.argv[1], "w") as out:
    for step in range(1, 9):
        watch.step = step
        step_fn(torch.randn(2, step + 3, 8)).sum().backward()
        for event in watch.drain():
            out.write(json.dumps(event) + "\\n")
watch.stop()
"""


def run_loop(tmp_path: Path) -> list[dict]:
    script, events = tmp_path / "loop.py", tmp_path / "events.jsonl"
    script.write_text(LOOP, encoding="utf-8")
    done = subprocess.run([PYTHON, str(script), str(events)], env=child_env(), capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]


def test_a_loop_with_changing_lengths_reports_its_recompiles_the_guard_and_the_limit(tmp_path: Path) -> None:
    events = run_loop(tmp_path)
    compiled = [e for e in events if e["what"] == "compile"]
    assert [(e["compile_id"], e["step"]) for e in compiled] == [("0/0", 1), ("0/1", 2)]
    assert compiled[1]["reason"] == "tensor 'args[0]' size mismatch at index 1. expected 4, actual 5"
    assert all(e["seconds"] > 0 for e in compiled)
    (limit,) = [e for e in events if e["what"] == "limit"]
    assert (limit["limit"], limit["step"], limit["frame"]) == (2, 3, "0")

    frames = CompileFrames()
    for event in events:
        frames.apply(event)
    (frame,) = frames.frames.values()
    assert (frame.compiles, frame.recompile_count, frame.limit) == (2, 1, 2)
    assert guard_words(frame.recompiles[0][1]) == "args[0] dimension 1 was 4, now 5"
    text = "\n".join(frames.lines())
    assert "hit recompile_limit (2) at step 3: runs uncompiled since" in text
    assert "2: args[0] dimension 1 was 4, now 5" in text

    found = {f.id: f for f in findings(frames, warmup_end=1, hpu=False)}
    assert set(found) == {"compile-limit", "torch-recompiling", "should-be-dynamic"}
    assert "raising recompile_limit only hides it" in found["compile-limit"].fix
    assert "mark_dynamic(tensor, 1)" in found["should-be-dynamic"].fix
    assert "pad_to_multiple_of" in found["torch-recompiling"].fix
    assert "Intel" not in found["torch-recompiling"].fix  # Gaudi's advice only on Gaudi
    gaudi = {f.id: f for f in findings(frames, warmup_end=1, hpu=True)}
    assert "bucketing" in gaudi["torch-recompiling"].fix

    why = WhySlow()
    for event in events:
        why.apply(event)
    on_gaudi, on_cpu = why.lines(hpu=True), why.lines(hpu=False)
    assert on_gaudi[:-1] == on_cpu  # on Gaudi, a line says whose count this is, beside Intel's
    assert "Intel's runtime file counts the graphs hpu_backend compiles" in on_gaudi[-1]
    assert "not added up" in on_gaudi[-1]


def test_guard_words_keeps_torch_words_for_other_guards() -> None:
    assert guard_words("tensor 'x' stride mismatch at index 0. expected 8, actual 1") == (
        "x stride of dimension 0 was 8, now 1"
    )
    assert guard_words("tensor 'kwargs['input_ids']' size mismatch at index 1. expected 42, actual 65") == (
        "kwargs['input_ids'] dimension 1 was 42, now 65"
    )
    assert guard_words("L['flag'] == True") == "L['flag'] == True"
