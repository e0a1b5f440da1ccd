"""env.int64, env.lazy_mode, env.visible_modules: passing and failing environments."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gaudi_tui.core.doctor.checks import envvars
from tests.doctor.hosts import gaudi2_snapshot, make_ctx


def test_int64_set(tmp_path: Path) -> None:
    result = envvars.env_int64(make_ctx(tmp_path, {"PT_ENABLE_INT64_SUPPORT": "1"}))
    assert result.status == "ok"
    assert result.env_fix == {}


@pytest.mark.parametrize(
    ("value", "finding"), [(None, "is not set"), ("true", "is 'true', and only '1' enables it")]
)
def test_int64_missing_warns_with_an_env_fix(tmp_path: Path, value: str | None, finding: str) -> None:
    result = envvars.env_int64(make_ctx(tmp_path, {"PT_ENABLE_INT64_SUPPORT": value}))
    assert result.status == "warn"
    assert result.finding == f"PT_ENABLE_INT64_SUPPORT {finding}"
    assert "cast Long to Int" in result.explanation
    assert result.env_fix == {"PT_ENABLE_INT64_SUPPORT": "1"}


@pytest.mark.parametrize(("value", "mode"), [("0", "eager mode"), ("1", "lazy mode")])
def test_lazy_mode_explicit_values_pass(tmp_path: Path, value: str, mode: str) -> None:
    result = envvars.env_lazy_mode(make_ctx(tmp_path, {"PT_HPU_LAZY_MODE": value}))
    assert result.status == "ok"
    assert result.finding.startswith(f"PT_HPU_LAZY_MODE={value}: {mode}")


def test_lazy_mode_unset_shows_raw_and_effective_mode(tmp_path: Path) -> None:
    result = envvars.env_lazy_mode(make_ctx(tmp_path))
    assert result.status == "warn"
    assert "not set" in result.finding and "read that as 1 (lazy)" in result.finding
    assert "torch.compile" in result.explanation
    assert result.env_fix == {"PT_HPU_LAZY_MODE": "0"}


@pytest.mark.parametrize(("value", "why"), [("2", "no longer supported"), ("lazy", "only 0 and 1 are valid")])
def test_lazy_mode_invalid_values_fail(tmp_path: Path, value: str, why: str) -> None:
    result = envvars.env_lazy_mode(make_ctx(tmp_path, {"PT_HPU_LAZY_MODE": value}))
    assert result.status == "fail"
    assert why in result.finding


def visible(tmp_path: Path, modules: str | None = None, devices: str | None = None, mapped: bool = True):
    env = {"HABANA_VISIBLE_MODULES": modules, "HABANA_VISIBLE_DEVICES": devices}
    return envvars.env_visible_modules(
        make_ctx(tmp_path, env, snapshot=gaudi2_snapshot() if mapped else None)
    )


def test_visible_unset_or_all(tmp_path: Path) -> None:
    assert visible(tmp_path).status == "ok"
    result = visible(tmp_path, devices="all")
    assert result.status == "ok"
    assert "every card is visible" in result.finding


def test_visible_supported_set_with_consistent_indices(tmp_path: Path) -> None:
    # modules 2,3 are indices 0,2 in the replayed device map
    result = visible(tmp_path, modules="2,3", devices="0,2")
    assert (result.status, result.finding) == ("ok", "HABANA_VISIBLE_MODULES=2,3: {2,3} is a supported set")


def test_visible_devices_alone_are_mapped_to_modules(tmp_path: Path) -> None:
    result = visible(tmp_path, devices="4,7")
    assert result.status == "ok"
    assert result.finding == "HABANA_VISIBLE_DEVICES=4,7 (modules 0,1): {0,1} is a supported set"


@pytest.mark.parametrize(
    ("modules", "devices", "finding"),
    [
        ("0;1", None, "HABANA_VISIBLE_MODULES='0;1' is not a comma-separated list of numbers"),
        ("1,1", None, "HABANA_VISIBLE_MODULES='1,1' names a card twice"),
        (None, "0,x", "HABANA_VISIBLE_DEVICES='0,x' is not a comma-separated list of numbers"),
    ],
)
def test_visible_malformed_fails(
    tmp_path: Path, modules: str | None, devices: str | None, finding: str
) -> None:
    result = visible(tmp_path, modules, devices)
    assert (result.status, result.finding) == ("fail", finding)
    assert "hl-smi -Q index,module_id" in result.fix


def test_visible_inconsistent_with_each_other_fails(tmp_path: Path) -> None:
    result = visible(tmp_path, modules="0,1", devices="0,1")
    assert result.status == "fail"
    assert result.finding == "HABANA_VISIBLE_DEVICES=0,1 are modules 2,6, but HABANA_VISIBLE_MODULES=0,1"


def test_visible_inconsistent_lengths_without_a_device_map(tmp_path: Path) -> None:
    result = visible(tmp_path, modules="0,1", devices="0,1,2,3", mapped=False)
    assert result.status == "fail"
    assert "names 4 card(s) but HABANA_VISIBLE_MODULES names 2" in result.finding


def test_visible_module_missing_from_the_device_map_fails(tmp_path: Path) -> None:
    four = dataclasses.replace(gaudi2_snapshot(), devices=gaudi2_snapshot().devices[:4])
    env = {"HABANA_VISIBLE_MODULES": "0,1"}
    result = envvars.env_visible_modules(make_ctx(tmp_path, env, snapshot=four))
    assert result.status == "fail"
    assert (
        result.finding == "HABANA_VISIBLE_MODULES=0,1 names module(s) 0,1 not on this host (modules 2,3,6,7)"
    )


def test_visible_unsupported_set_warns_with_the_nearest(tmp_path: Path) -> None:
    result = visible(tmp_path, modules="2,3,4,5")
    assert result.status == "warn"
    assert "is not supported" in result.finding
    assert result.fix == "export HABANA_VISIBLE_MODULES=0,1,2,3"


def test_visible_module_out_of_range_without_a_device_map(tmp_path: Path) -> None:
    result = visible(tmp_path, modules="8,9", mapped=False)
    assert result.status == "warn"
    assert "module IDs run from 0 to 7" in result.finding
    assert result.fix.startswith("Use module IDs 0–7")


def test_visible_devices_none_warns(tmp_path: Path) -> None:
    result = visible(tmp_path, devices="none")
    assert result.status == "warn"
    assert "no card" in result.finding
