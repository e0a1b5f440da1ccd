"""The why-slow shots of the README (scripts/screenshots.py): real CPU runs of a user's Trainer
script on the demo model, one under torch.compile that hits recompile_limit, one profiled with `P`
while it trains."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from shot_steps import ROOT, STARTED, select_run, until


def trainer_script_job(*extra: str, steps: int = 12) -> str:
    """A user's Trainer script on the demo model as a real CPU command job through the panel's
    wrapper (tests/insight/test_why_slow_trainer.py's script); its run id."""
    sys.path.insert(0, str(ROOT))
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.demo import model_dir
    from gaudi_tui.core.jobs import control, spec
    from tests.insight.test_why_slow_trainer import SCRIPT

    project = Path(tempfile.mkdtemp(prefix="gaudi-tui-shots-why-"))
    (project / "train.py").write_text(SCRIPT, encoding="utf-8")
    command = [sys.executable, "train.py", "--model", str(model_dir()), "--max_steps", str(steps), *extra]
    values = {
        "kind": "command",
        "name": "train.py",
        "workdir": str(project),
        "device": "cpu",
        "command": command,
    }
    cpu = Accelerator("cpu", "screenshot")
    return control.submit(spec.from_mapping(values), cpu, env=dict(os.environ, PYTHONPATH=str(ROOT))).id


async def why_recompiling(pilot) -> None:
    """Details of a real CPU run of that script under torch.compile, fed a new length each step
    (recompile_limit 2): its recompiles, the guard in words, the limit reached, and their fixes."""
    from gaudi_tui.core.jobs import runfolder
    from gaudi_tui.core.jobs.status import TERMINAL

    run = runfolder.find(trainer_script_job("--compile"))
    await until(
        pilot, lambda: (s := run.status()) is not None and s.state in TERMINAL, "the compiled run", 300
    )
    await select_run(pilot, run.id, "the compiled run", "d", settle=2.5)


async def why_profile(pilot) -> None:
    """A real running CPU job of that script profiled with P (the dialog's default, 5 steps): Details
    lists the top ops by self time, host against device time, the step time in the window."""
    from gaudi_tui.core.jobs import control, runfolder
    from gaudi_tui.ui.widgets.insight_panel import InsightPanel

    run = runfolder.find(trainer_script_job(steps=400))
    STARTED.append(lambda: control.kill(run))
    await until(pilot, lambda: b'"log"' in _read(run.metrics_path), "the job's first log", 300)
    screen = pilot.app.screen
    await select_run(pilot, run.id, "the running job", "d", settle=1.0)
    await pilot.press("P")
    await pilot.pause(0.5)
    await pilot.press("enter")
    panel = screen.query_one(InsightPanel)
    await until(pilot, lambda: "top ops by self time" in str(panel.render()), "the profile in Details", 120)
    pilot.app.clear_notifications()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
