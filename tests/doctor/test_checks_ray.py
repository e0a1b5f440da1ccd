"""`ray.hpu_visible`: Ray's own HPU detection, run in a child with the fake habana_frameworks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gaudi_tui.core.doctor.checks import cluster
from tests import required
from tests.doctor.hosts import gaudi2_snapshot, make_ctx

required.module("ray", "ray", "ray is not installed: pip install 'gaudi-tui[cluster]'")


def test_ray_counts_the_cards_through_habana_frameworks(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, {"FAKE_HPU_CARDS": "8"}, snapshot=gaudi2_snapshot())
    result = cluster.ray_hpu_visible(ctx)
    assert result.status == "ok", result
    assert result.finding.endswith("counts 8 HPU(s) (Intel-GAUDI2)")


def test_fewer_hpus_than_cards_is_a_warning(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, {"FAKE_HPU_CARDS": "4"}, snapshot=gaudi2_snapshot())
    result = cluster.ray_hpu_visible(ctx)
    assert result.status == "warn"
    assert "counts 4 HPU(s) but the device map has 8 card(s)" in result.finding
    assert "--resources='{\"HPU\": 8}'" in result.fix


def test_without_habana_frameworks_ray_sees_none_of_the_cards(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, fakes=False, snapshot=gaudi2_snapshot())
    result = cluster.ray_hpu_visible(ctx)
    assert result.status == "fail"
    assert "sees 0 HPUs but the device map has 8 card(s)" in result.finding


def test_skipped_with_a_reason_when_ray_is_not_installed(tmp_path: Path) -> None:
    base = Path(sys.base_prefix) / "bin" / "python3"  # the interpreter without this venv's packages
    if not base.exists():
        pytest.skip(f"no base interpreter at {base}")
    ctx = make_ctx(tmp_path, snapshot=gaudi2_snapshot(), python=str(base))
    result = cluster.ray_hpu_visible(ctx)
    assert (result.status, result.finding) == (
        "skip",
        "Ray is not installed (cluster jobs need `pip install 'gaudi-tui[cluster]'`)",
    )
