"""`gaudi-tui jobs export` stays bounded on a hostile metrics.jsonl (issue 38, M10): a line with no end
for 64 MiB is read in slices without copying what came before (and skipped, said so), and a file that
names a new key on every line gets at most MAX_FIGURES columns, not one full-length column a key."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pandas as pd
import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.jobs.export import MAX_FIGURES, SLICE_BYTES, lines_of
from tests.jobs.conftest import replay


def log(step: int, **figures: float) -> bytes:
    return (
        json.dumps({"event": "log", "time": 1.0 + step, "step": step, "loss": 1.0, **figures}).encode()
        + b"\n"
    )


def test_a_64_mib_line_is_read_in_slices_and_skipped_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = replay()
    long = b'{"event": "log", "step": 2, "pad": "' + b"x" * (64 << 20) + b'"}\n'
    run.metrics_path.write_bytes(log(1) + long + log(3))
    tracemalloc.start()
    try:
        lines = list(lines_of(run.metrics_path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lines == [log(1)[:-1], None, log(3)[:-1]]
    assert peak < 4 * SLICE_BYTES, f"peak {peak >> 20} MiB for a 64 MiB line"
    assert main(["jobs", "export", run.id, "--csv", str(tmp_path / "x.csv")]) == 0
    out, err = capsys.readouterr()
    assert out.strip().endswith(": 2 rows of 1 run")
    assert "skipped 1 line(s) longer than 4 MiB" in err
    assert list(pd.read_csv(tmp_path / "x.csv")["step"]) == [1, 3]


def test_a_new_key_on_every_line_adds_at_most_max_figures_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = replay()
    run.metrics_path.write_bytes(b"".join(log(s, **{f"key{s}": float(s)}) for s in range(2000)))
    assert main(["jobs", "export", run.id, "--csv", str(tmp_path / "x.csv")]) == 0
    frame = pd.read_csv(tmp_path / "x.csv")
    assert len(frame) == 2000 and len(frame.columns) == 5 + MAX_FIGURES
    assert list(frame["loss"]) == [1.0] * 2000  # the first key stays a column
    assert (
        f"skipped {2001 - MAX_FIGURES} figure(s) of keys past the first {MAX_FIGURES}"
        in capsys.readouterr().err
    )
