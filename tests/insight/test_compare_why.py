"""Compare sets why each run was slow side by side (issue 40 item 4), from real CPU runs of a user's
Trainer script through the panel's wrapper (tests/insight/test_why_slow_trainer.py's script): one
under torch.compile fed a new length each step (recompiles, then recompile_limit), one whose dataset
sleeps in `__getitem__` and that was asked for a profile (the input wait, the profile's top op).
Both are CPU runs: the Gaudi-only row says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.insight.stalls import STALL_SHARE
from tests.insight.test_profile_running_job import start
from tests.jobs.conftest import events, log_tail, no_stray_processes, wait_done  # noqa: F401

STEPS = 12


@pytest.mark.slow
def test_compare_shows_recompiles_the_limit_the_input_wait_and_the_top_op(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    compiled = start(tmp_path / "compiled", steps=STEPS, extra=("--compile",))
    slow = start(tmp_path / "slow", steps=STEPS, ask=3, extra=("--sleep", "0.4"))
    for run in (compiled, slow):
        assert wait_done(run, 180) == "succeeded", log_tail(run)

    assert main(["jobs", "compare", compiled.id, slow.id, "--json"]) == 0
    why = {run["id"]: run["why"] for run in json.loads(capsys.readouterr().out)["runs"]}
    frames = [e for e in events(compiled, "compile") if e.get("what") == "compile"]
    recompiles = sum(1 for e in frames if "reason" in e)
    limited = {e["frame"] for e in events(compiled, "compile") if e.get("what") == "limit"}
    assert recompiles >= 1 and limited, events(compiled, "compile")
    said = why[compiled.id]["recompiles"]
    assert said.startswith(f"{recompiles} ({len(frames)} compiles)")
    assert all(f"frame {f} hit recompile_limit (2), runs eager" in said for f in limited)
    assert why[slow.id]["recompiles"] == "none (not compiled)"

    (stall,) = [e for e in events(slow, "stall") if e["step"] == STEPS]
    assert stall["share"] > STALL_SHARE
    assert why[slow.id]["input wait"] == f"{stall['share']:.0%} of step time"
    (taken,) = events(slow, "profile")
    top = taken["top_ops"][0]  # here the loader's sleep: `enumerate(DataLoader)#…__next__`
    assert why[slow.id]["top op (last profile)"] == (
        f"{top['name']} {top['self_host_us'] / 1000:.1f} ms (steps {taken['first_step']}–{taken['step']})"
    )
    assert why[compiled.id]["top op (last profile)"] == "none taken"
    assert {w["Gaudi graph compiles"] for w in why.values()} == {"Gaudi runs only"}

    assert main(["jobs", "compare", compiled.id, slow.id]) == 0
    shown = capsys.readouterr().out
    assert "why slow" in shown and "hit recompile_limit (2)" in shown and "Gaudi runs only" in shown
