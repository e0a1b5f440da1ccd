"""H6: Training · compare shows a run's error as text: a run whose error holds markup's brackets
(`KeyError: '[/INST]'`, a chat template's closing tag) crashed the panel with a MarkupError."""

from __future__ import annotations

import json

from tests.jobs.conftest import replay
from tests.jobs.test_job_compare_screen import cells, open_comparison
from tests.jobs.test_training_screen import make_app


async def test_an_error_with_brackets_is_shown_as_it_is() -> None:
    failed, ray = replay(), replay(recorded="ray-runs")
    status = json.loads((failed.path / "status.json").read_text())
    status.update(state="failed", error="KeyError: '[/INST]'", exit_code=1)
    (failed.path / "status.json").write_text(json.dumps(status))
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_comparison(pilot, 2)
        outcomes = {row[1] for row in cells(screen, "#compare-final")}
        assert "failed: KeyError: '[/INST]'" in outcomes, outcomes
    assert ray.path.is_dir()
