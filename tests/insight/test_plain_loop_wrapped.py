"""A user's plain training loop (no Trainer) run as a command job through the panel's wrapper, on
CPU (a real run, no fakes): under torch.compile (backend "eager", dynamic=False, recompile_limit 8)
fed a new sequence length each step, the wrapper's compile watch (`worker/loop_watch.py`) writes each
compile with its step (the optimizer's step hook), the guard that failed and the frame that hit the
limit into metrics.jsonl; `jobs insight` shows them with their findings, and the job's supervisor
sends the `compile_limit` and `torch_recompiling` alerts once each, which `watch` prints."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gaudi_tui.core.alerts.config import AlertConfig
from gaudi_tui.core.alerts.watcher import TerminalFollower
from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.insight import text
from gaudi_tui.core.jobs.kinds.command_follow import OutputFollower
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import from_mapping
from gaudi_tui.core.jobs.worker.sinks import FileSink
from tests.alerts.conftest import configure, kept
from tests.conftest import CPU, PYTHON, child_env
from tests.insight.test_why_slow_trainer import insight_of
from tests.jobs.conftest import events, log_tail, no_stray_processes, wait_done, wait_for  # noqa: F401

LOOP = """\
import json, os, sys, time
import torch

torch._dynamo.config.recompile_limit = 8
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
step_fn = torch.compile(model, backend="eager", dynamic=False)
for step in range(1, 13):
    optimizer.zero_grad()
    loss = step_fn(torch.randn(2, step + 3, 8)).pow(2).mean()
    loss.backward()
    optimizer.step()
    print(json.dumps({"step": step, "loss": loss.item()}), flush=True)
while not os.path.exists(sys.argv[1]):  # the test lets it end once the alerts are out
    time.sleep(0.05)
"""


@pytest.mark.slow
def test_a_compiled_plain_loop_reports_its_recompiles_the_guard_and_the_limit(tmp_path: Path) -> None:
    configure(stall_min_s=2.0)  # the supervisor's checks every 0.2 s
    follower = TerminalFollower(AlertConfig(), io.StringIO())  # `gaudi-tui watch`'s follower
    (tmp_path / "loop.py").write_text(LOOP, encoding="utf-8")
    finish = tmp_path / "finish"
    spec = from_mapping({
        "kind": "command", "workdir": str(tmp_path), "device": "cpu", "metrics_source": "json",
        "command": [PYTHON, "loop.py", str(finish)],
    })  # fmt: skip
    run = control.submit(spec, CPU, env=child_env())
    try:
        wait_for(lambda: kept("compile_limit") and kept("torch_recompiling"), 120, "the two alerts")
    finally:
        finish.write_text("", encoding="utf-8")
    assert wait_done(run, 120) == "succeeded", log_tail(run)

    compiled = [e for e in events(run, "compile") if e["what"] == "compile"]
    assert [(e["compile_id"], e["step"]) for e in compiled] == [(f"0/{i}", i + 1) for i in range(8)]
    assert compiled[1]["reason"] == "tensor 'args[0]' size mismatch at index 1. expected 4, actual 5"
    (limit,) = [e for e in events(run, "compile") if e["what"] == "limit"]
    assert (limit["limit"], limit["step"], limit["frame"]) == (8, 9, "0")
    assert [e["step"] for e in events(run, "log")] == list(range(1, 13))  # the follower's, untouched

    lines = "\n".join(text.lines(insight_of(run)))
    assert "8 compiles, 7 recompiles" in lines and "hit recompile_limit (8) at step 9" in lines
    assert "8: args[0] dimension 1 was 10, now 11" in lines
    found = {f.id for f in insight_of(run).findings}
    assert {"compile-limit", "torch-recompiling", "should-be-dynamic"} <= found

    assert len(kept("compile_limit")) == 1 and len(kept("torch_recompiling")) == 1  # once per attempt
    shown = [alert.title for alert in follower.poll()]
    assert "A frame hit torch.compile's recompile limit" in shown
    assert "Still recompiling after warm-up (torch.compile)" in shown


def test_a_re_attached_follower_does_not_count_the_loops_compile_lines_as_its_own(tmp_path: Path) -> None:
    """A supervisor re-attaching (Slurm) skips the events its followers wrote after `metrics_base`:
    the compile events the job's loop watch appended between them are not among those."""
    run = RunFolder(tmp_path)
    sink = FileSink(run.metrics_path)
    for step in (1, 2, 3):  # the follower's log line, then the job's compile event of the next step
        with run.metrics_path.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"event": "log", "step": step, "loss": 1.0}) + "\n")
        sink.write({"event": "compile", "time": 0.0, "step": step + 1, "what": "compile", "frame": "0"})
    sink.close()
    log = tmp_path / "stdout.log"
    log.write_text("", encoding="utf-8")
    follower = OutputFollower(run, from_mapping({"kind": "command", "command": ["true"]}), log, offset=0)
    follower.skip_recorded(0)
    assert follower.skip == 3
