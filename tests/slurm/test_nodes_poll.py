"""The Slurm screen's nodes: `sinfo --json` at most every NODES_EVERY_S, afresh on request, and a
failure never kept. `sinfo` here is a script that prints the recorded answer of a real 22.05
cluster (tests/data/slurm/) and counts its calls."""

from __future__ import annotations

import os
from pathlib import Path

from gaudi_tui.core.slurm.cli import Slurm
from gaudi_tui.core.slurm.nodes_poll import NodesPoll

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _sinfo(tmp_path: Path) -> tuple[Slurm, Path]:
    """A counting sinfo; it prints the recorded nodes while `answer` names a file, else fails."""
    bin_dir, calls, answer = tmp_path / "bin", tmp_path / "calls", tmp_path / "answer"
    bin_dir.mkdir()
    tool = bin_dir / "sinfo"
    tool.write_text(
        f'#!/bin/sh\necho x >> "{calls}"\n'
        f'[ -s "{answer}" ] || {{ echo "sinfo: error: slurm_load_partitions: Unable to contact slurm controller" >&2; exit 1; }}\n'
        f'exec cat "$(cat "{answer}")"\n'
    )
    tool.chmod(0o755)
    answer.write_text(str(DATA / "sinfo.json"))
    return Slurm(env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}), calls


def _calls(calls: Path) -> int:
    return len(calls.read_text().splitlines()) if calls.exists() else 0


def test_nodes_are_asked_once_per_interval_and_afresh_on_request(tmp_path: Path) -> None:
    slurm, calls = _sinfo(tmp_path)
    clock = Clock()
    nodes = NodesPoll(slurm, every=10.0, clock=clock)
    first, error = nodes.get()
    assert error is None and first
    clock.now += 9.9
    assert nodes.get() == (first, None)
    assert _calls(calls) == 1
    clock.now += 0.1
    assert nodes.get() == (first, None)
    assert _calls(calls) == 2
    nodes.expire()
    nodes.get()
    assert _calls(calls) == 3


def test_a_failed_sinfo_is_said_and_tried_again_at_the_next_refresh(tmp_path: Path) -> None:
    slurm, calls = _sinfo(tmp_path)
    (tmp_path / "answer").write_text("")
    nodes = NodesPoll(slurm, every=10.0, clock=Clock())
    found, error = nodes.get()
    assert found == () and error and "Unable to contact slurm controller" in error
    (tmp_path / "answer").write_text(str(DATA / "sinfo.json"))
    found, error = nodes.get()
    assert error is None and found
    assert _calls(calls) == 2
