"""`gaudi-tui jobs export ID … --csv|--parquet FILE`, read back with pandas."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from gaudi_tui.cli import main
from tests.jobs.conftest import events, replay


def test_csv_and_parquet_hold_every_metric_by_run_and_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local, ray = replay(), replay(recorded="ray-runs")
    assert main(["jobs", "export", local.id, ray.id, "--parquet", str(tmp_path / "runs.parquet")]) == 0
    assert capsys.readouterr().out.strip() == f"{tmp_path / 'runs.parquet'}: 74 rows of 2 runs"
    assert main(["jobs", "export", local.id, ray.id, "--csv", str(tmp_path / "runs.csv")]) == 0
    frames = [pd.read_parquet(tmp_path / "runs.parquet"), pd.read_csv(tmp_path / "runs.csv")]
    for frame in frames:
        assert list(frame.columns[:5]) == ["run", "attempt", "step", "event", "time"]
        assert {"loss", "learning_rate", "grad_norm", "tokens_per_s", "memory_mib", "train_runtime"} <= set(
            frame.columns
        )
        for run in (local, ray):
            mine = frame[frame["run"] == run.id]
            logs = events(run, "log")
            assert len(mine[mine["event"] == "log"]) == len(logs)
            assert list(mine[mine["event"] == "log"]["loss"]) == [e["loss"] for e in logs]
            assert list(mine[mine["event"] == "log"]["step"]) == [e["step"] for e in logs]
            summary = mine[mine["event"] == "summary"]
            assert len(summary) == 1 and math.isnan(summary["loss"].iloc[0])  # empty where none
    parquet, csv = frames
    assert str(parquet["time"].dtype) == "datetime64[ns, UTC]"
    pivot = parquet[parquet["event"] == "log"].pivot_table(
        index="step", columns="run", values="loss", observed=True
    )
    assert list(pivot.columns) == [local.id, ray.id]  # the notebook's overlay, one column a run


def test_a_resume_is_a_new_attempt_and_odd_lines_are_skipped(tmp_path: Path) -> None:
    run = replay()
    lines = [
        {"event": "begin", "time": 1.0, "step": 0},
        {"event": "log", "time": 2.0, "step": 5, "loss": 2.0},
        {"event": "save", "time": 2.5, "step": 5, "checkpoint": "checkpoint-5"},
        {"event": "log", "time": 3.0, "step": 10, "loss": 1.5, "note": "text", "flag": True},
        {"event": "begin", "time": 4.0, "step": 5},
        {"event": "log", "time": 5.0, "step": 10, "loss": 1.4},
        {"event": "eval", "time": 5.5, "step": 10, "eval_loss": 1.6},
    ]
    text = (
        "".join(json.dumps(e) + "\n" for e in lines)
        + 'not json\n[1, 2]\n{"event": "log", "step": 11, "loss": 1.3'
    )
    run.metrics_path.write_text(text)
    assert main(["jobs", "export", run.id, "--csv", str(tmp_path / "one.csv")]) == 0
    frame = pd.read_csv(tmp_path / "one.csv")
    assert list(frame["attempt"]) == [1, 1, 2, 2]
    assert list(frame["step"]) == [5, 10, 10, 10]
    assert list(frame["event"]) == ["log", "log", "log", "eval"]
    assert frame["eval_loss"].iloc[3] == 1.6 and math.isnan(frame["eval_loss"].iloc[0])
    assert "note" not in frame.columns and "flag" not in frame.columns and "checkpoint" not in frame.columns


def test_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = replay()
    assert main(["jobs", "export", "nosuchjob", "--csv", str(tmp_path / "x.csv")]) == 1
    assert "no job 'nosuchjob'" in capsys.readouterr().err
    assert main(["jobs", "export", run.id, "--csv", str(tmp_path / "no" / "x.csv")]) == 1
    assert (
        f"cannot write {tmp_path / 'no' / 'x.csv'}: {tmp_path / 'no'} is not a folder"
        in capsys.readouterr().err
    )
    kept = tmp_path / "kept.csv"
    kept.mkdir()  # a folder where the file should go: refused, and nothing is left beside it
    assert main(["jobs", "export", run.id, "--parquet", str(kept)]) == 1
    assert f"cannot write {kept}: Is a directory" in capsys.readouterr().err
    assert not (tmp_path / ".kept.csv.partial").exists()
    with pytest.raises(SystemExit):
        main(["jobs", "export", run.id])  # --csv or --parquet is required
    assert "one of the arguments --csv --parquet is required" in capsys.readouterr().err
