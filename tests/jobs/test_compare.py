"""Runs side by side (`core/jobs/compare.py`, `gaudi-tui jobs compare`): real fine-tunes of the
demo model, and recorded run folders of other targets and kinds (a Ray run, a command job, command
jobs under the fake Gaudi runtime: see the data READMEs), and a folder an older version left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.jobs import compare, runfolder, supervisor
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.ui.screens.job_compare import JobCompareScreen
from gaudi_tui.ui.screens.training import TrainingScreen
from tests.jobs.conftest import DATA, replay, tiny, wait_done
from tests.jobs.test_training_screen import make_app
from tests.pilot import settle

TESTS = DATA.parent.parent
COMMAND_RUNS = TESTS / "commands" / "data" / "runs"
INSIGHT_RUNS = TESTS / "insight" / "data" / "runs"


def recorded(folder: Path) -> RunFolder:
    """A recorded run folder from another test area's data (same `{RUN}` convention)."""
    return replay(str(folder), recorded="runs")


def compared(capsys: pytest.CaptureFixture[str], *ids: str) -> dict:
    assert main(["jobs", "compare", *ids, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def diff_of(data: dict) -> dict[str, list[str]]:
    return {row["field"]: row["values"] for row in data["diff"]}


def table_text(screen: JobCompareScreen, table_id: str) -> list[list[str]]:
    from textual.widgets import DataTable

    table = screen.query_one(table_id, DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_two_fine_tunes_of_different_learning_rates(capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's "done when": two real fine-tunes, marked on Training and opened side by side,
    show both losses and learning_rate as the one setting that differs (besides the name)."""
    slow = runfolder.create(tiny(name="lr 1e-3", learning_rate=1e-3, max_steps=10), accelerator="cpu")
    fast = runfolder.create(tiny(name="lr 5e-3", learning_rate=5e-3, max_steps=10), accelerator="cpu")
    supervisor.start(slow)
    supervisor.start(fast)
    assert (wait_done(slow, 240), wait_done(fast, 240)) == ("succeeded", "succeeded")

    data = compared(capsys, slow.id, fast.id)
    assert diff_of(data) == {"name": ["lr 1e-3", "lr 5e-3"], "learning_rate": ["0.001", "0.005"]}
    for run in data["runs"]:
        assert run["lines"]["loss"]["step"][-1] == 10.0 and len(run["lines"]["loss"]["value"]) == 10
        assert max(run["lines"]["learning_rate"]["value"]) > 0
        assert run["final"]["state"] == "succeeded" and run["final"]["steps"] == 10
        assert run["final"]["best_loss"] == min(run["lines"]["loss"]["value"])
        assert run["final"]["steps_per_s"] > 0 and run["final"]["peak_memory_mib"] > 0
        assert run["lines"]["compiles"]["step"] == []  # CPU: no compiles, and no error for it
    peaks = [max(r["lines"]["learning_rate"]["value"]) for r in data["runs"]]
    assert peaks[1] == pytest.approx(5 * peaks[0])

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        training = app.screen
        assert isinstance(training, TrainingScreen)
        await settle(pilot, lambda: len(training.views) == 2 and training.selected is not None)
        await pilot.press("m", "down", "m")
        assert sorted(training.marked) == sorted([slow.id, fast.id])
        await pilot.press("C")
        screen = app.screen
        assert isinstance(screen, JobCompareScreen)
        await settle(pilot, lambda: screen.comparison is not None, timeout=30)
        legend = [row[0] for row in table_text(screen, "#compare-final")]
        assert sorted(legend) == [f"━━ lr 1e-3 · {slow.id[-4:]}", f"━━ lr 5e-3 · {fast.id[-4:]}"]
        diff = table_text(screen, "#compare-diff")
        assert [row[0] for row in diff] == ["name", "learning_rate"]
        loss = screen.query_one("#compare-loss").plt._active  # noqa: SLF001 - plotext state
        assert len(loss.monitor.x) == 2  # both losses drawn on the one chart
        await pilot.press("escape")
        assert app.screen is training


def test_runs_of_other_targets_and_kinds(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "UTC")  # the fake runtime's `generated_on` is local time (its README)
    local, ray = replay(), replay(recorded="ray-runs")
    command = recorded(next(COMMAND_RUNS.iterdir()))
    gaudi = recorded(INSIGHT_RUNS / "20261201-202631-lengths-variable-4976")
    data = compared(capsys, local.id, ray.id, command.id, gaudi.id)
    diff = diff_of(data)
    assert diff["target"] == ["local", "ray", "local", "local"]
    assert diff["kind"] == ["trainer", "trainer", "command", "command"]
    assert diff["run.nodes"] == ["—", "192.0.2.2", "—", "—"]  # the Ray ranks' node, from cluster.json
    assert diff["run.world_size"] == ["1", "2", "2", "1"]
    assert diff["run.accelerator"] == ["cpu", "ray:cpu", "cpu", "cpu"]
    assert diff["env.PYTHONPATH"][0] == "—" and diff["env.PYTHONPATH"][1] == "/opt/gaudi-tui"
    assert diff["env.PT_HPU_METRICS_FILE"][3] == "{run}/hpu_metrics.json"  # not this test's own path
    assert "learning_rate" not in diff
    by_id = {r["id"]: r for r in data["runs"]}
    assert by_id[command.id]["final"]["state"] == "stopped" and by_id[command.id]["final"]["steps"] == 96
    # the command's wrapper counts samples only: every run's throughput is in samples/s
    assert {r["throughput_unit"] for r in data["runs"]} == {"samples/s"}
    assert by_id[ray.id]["lines"]["throughput"] == by_id[ray.id]["lines"]["samples_per_s"]
    assert by_id[ray.id]["lines"]["tokens_per_s"]["value"]  # kept in the JSON
    two = compared(capsys, local.id, ray.id)
    assert {r["throughput_unit"] for r in two["runs"]} == {"tokens/s"}
    compiles = by_id[gaudi.id]["lines"]["compiles"]
    assert compiles["value"][-1] == 20.0 and compiles["step"][-1] == 20.0  # one graph a batch length
    assert by_id[local.id]["lines"]["compiles"]["step"] == []
    assert by_id[gaudi.id]["why"]["Gaudi graph compiles"] == "20"  # Intel's runtime file's count
    assert by_id[local.id]["why"]["Gaudi graph compiles"] == "Gaudi runs only"  # a CPU run says so
    assert by_id[local.id]["why"]["recompiles"] == "none (not compiled)"
    assert main(["jobs", "compare", local.id, ray.id]) == 0
    text = capsys.readouterr().out
    assert "target" in text and "ray" in text and "succeeded" in text and "3:42" in text


def test_an_old_or_broken_run_folder_shows_dashes(capsys: pytest.CaptureFixture[str]) -> None:
    """A folder with a status only (no spec, no metrics: what an early version or a crash leaves)
    and one whose spec no longer reads: every figure is "—", nothing raises."""
    local = replay()
    bare = RunFolder(runfolder.runs_dir() / "20250101-000000-old-0000")
    bare.path.mkdir()
    bare.status_path.write_text('{"state": "failed", "error": "gone"}')
    broken = RunFolder(runfolder.runs_dir() / "20250101-000001-broken-0001")
    broken.path.mkdir()
    broken.status_path.write_text('{"state": "succeeded"}')
    broken.spec_path.write_text("max_steps = 'many'\n")
    broken.metrics_path.write_text('{"event": "log", "step": "x", "loss": "nan"}\nnot json\n[1]\n')
    data = compared(capsys, local.id, bare.id, broken.id)
    for run in data["runs"][1:]:
        assert run["final"]["best_loss"] is None and run["final"]["steps_per_s"] is None
        assert run["fields"]["learning_rate"] == "—" and run["fields"]["run.arguments"] == "—"
    assert data["runs"][1]["final"]["error"] == "gone"
    assert main(["jobs", "compare", local.id, bare.id]) == 0
    assert "—" in capsys.readouterr().out


def test_only_what_differs_unless_all(capsys: pytest.CaptureFixture[str]) -> None:
    first, second = replay(), replay(recorded="ray-runs")
    differing = compared(capsys, first.id, second.id)
    assert "model" not in diff_of(differing)
    everything = compared(capsys, first.id, second.id, "--all")
    assert diff_of(everything)["model"] == ["demo", "demo"]
    assert everything["all"] is True and set(diff_of(differing)) < set(diff_of(everything))


def test_secrets_in_the_environment_are_masked(capsys: pytest.CaptureFixture[str]) -> None:
    first, second = replay(), replay(recorded="ray-runs")
    for run, token in ((first, "hf_first_secret"), (second, "hf_second_secret")):
        text = run.spec_path.read_text().replace("[env]", f'[env]\n"HF_TOKEN" = "{token}"')
        run.spec_path.write_text(text)
    assert main(["jobs", "compare", first.id, second.id, "--all", "--json"]) == 0
    out = capsys.readouterr().out
    assert "hf_first_secret" not in out and "hf_second_secret" not in out
    assert diff_of(json.loads(out))["env.HF_TOKEN"] == ["***", "***"]


def test_clear_errors(capsys: pytest.CaptureFixture[str]) -> None:
    run = replay()
    assert main(["jobs", "compare", run.id, "nosuchjob"]) == 1
    assert "no job 'nosuchjob'" in capsys.readouterr().err
    assert main(["jobs", "compare", run.id, run.id[-4:]]) == 2  # the same run twice is one run
    assert "give two runs or more" in capsys.readouterr().err
    with pytest.raises(ValueError, match="two runs or more"):
        compare.compare([run])


def test_recorded_fine_tunes_differ_only_in_learning_rate(capsys: pytest.CaptureFixture[str]) -> None:
    """The screenshot's two runs (tests/jobs/data/lr-runs): the same, fast, without training."""
    ids = [replay(p.name, recorded="lr-runs").id for p in sorted((DATA / "lr-runs").iterdir())]
    data = compared(capsys, *ids)
    assert diff_of(data) == {
        "name": ["demo lr 0.0005", "demo lr 0.002"],
        "learning_rate": ["0.0005", "0.002"],
    }
    assert [r["final"]["best_loss_step"] for r in data["runs"]] == [80, 74]


def test_a_slurm_run_names_its_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    """A Slurm job's nodes as its supervisor records them (`slurm.json`, written here by the
    target's own writer; no recorded Slurm run folder is kept)."""
    from gaudi_tui.core.jobs.targets.slurm import record

    local, ray = replay(), replay(recorded="ray-runs")
    slurm = RunFolder(runfolder.runs_dir() / "20261201-000000-demo-fine-tune-51a0")
    slurm.path.mkdir()
    for name in ("status.json", "metrics.jsonl"):
        (slurm.path / name).write_bytes((local.path / name).read_bytes())
    slurm.spec_path.write_text(
        local.spec_path.read_text().replace('device = "cpu"', 'device = "cpu"\ntarget = "slurm"')
    )
    record.write(
        slurm,
        record.SlurmRecord(attempt=1, job_name="gaudi-tui-x", script="", job_id=42, nodes=["gn-01", "gn-02"]),
    )
    diff = diff_of(compared(capsys, local.id, ray.id, slurm.id))
    assert diff["target"] == ["local", "ray", "slurm"]
    assert diff["run.nodes"] == ["—", "192.0.2.2", "gn-01,gn-02"]
