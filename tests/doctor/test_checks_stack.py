"""Checks read from package metadata (torch build, plugin vs driver, Accelerate, bitsandbytes, PEFT),
with fake `.dist-info` folders first on the path and replayed device maps."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaudi_tui.core.doctor.checks import stack
from tests.doctor.hosts import fake_dist, gaudi2_snapshot, make_ctx

HABANA_TORCH = "2.6.0+hpu.1.19.0.561.git3ef6f4b"


def site(tmp_path: Path, **versions: str) -> Path:
    folder = tmp_path / "site"
    for name, version in versions.items():
        fake_dist(folder, name.replace("_", "-"), version)
    return folder


def test_habana_torch_build_passes(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, site=[site(tmp_path, torch=HABANA_TORCH, habana_torch_plugin="1.19.0.561")])
    result = stack.torch_habana_build(ctx)
    assert (result.status, result.finding) == ("ok", f"torch {HABANA_TORCH} is Intel's Habana build")


@pytest.mark.parametrize(
    ("version", "kind"),
    [("2.13.0+cpu", "a CPU build"), ("2.5.1+cu121", "a CUDA build"), ("2.5.1", "a PyPI build")],
)
def test_pypi_torch_fails(tmp_path: Path, version: str, kind: str) -> None:
    result = stack.torch_habana_build(make_ctx(tmp_path, site=[site(tmp_path, torch=version)]))
    assert result.status == "fail"
    assert result.finding == f"torch {version} is not Intel's Habana build ({kind})"
    assert "constraints.txt" in result.fix


def test_torch_built_for_another_release_than_the_plugin_fails(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, site=[site(tmp_path, torch=HABANA_TORCH, habana_torch_plugin="1.22.0.740")])
    result = stack.torch_habana_build(ctx)
    assert result.status == "fail"
    assert "built for Gaudi 1.19.0" in result.finding and "1.22.0.740" in result.finding


def test_missing_torch_fails(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, site_path=(str(tmp_path / "empty"),))
    assert stack.torch_habana_build(ctx).finding == "torch is not installed"


@pytest.mark.parametrize(
    ("plugin", "driver", "status", "words"),
    [
        (
            "1.19.0.561",
            "1.19.1-6f47ddd",
            "ok",
            "driver 1.19.1-6f47ddd matches habana-torch-plugin 1.19.0.561",
        ),
        ("1.18.0.524", "1.19.1-6f47ddd", "warn", "one release behind driver 1.19.1-6f47ddd (N−1)"),
        ("1.15.1.15", "1.16.0-1234567", "fail", "before N−1 support (1.17)"),
        (
            "1.22.0.740",
            "1.19.1-6f47ddd",
            "fail",
            "habana-torch-plugin 1.22.0.740 does not match driver 1.19.1-6f47ddd",
        ),
        ("1.17.0.495", "1.19.1-6f47ddd", "fail", "does not match"),
    ],
)
def test_plugin_driver_match(tmp_path: Path, plugin: str, driver: str, status: str, words: str) -> None:
    ctx = make_ctx(
        tmp_path, site=[site(tmp_path, habana_torch_plugin=plugin)], snapshot=gaudi2_snapshot(driver)
    )
    result = stack.plugin_driver_match(ctx)
    assert result.status == status
    assert words in result.finding
    if status != "ok":
        assert "vault.habana.ai/gaudi-docker/1." in result.fix


def test_plugin_driver_match_uses_the_fake_plugin_metadata(tmp_path: Path) -> None:
    result = stack.plugin_driver_match(make_ctx(tmp_path, snapshot=gaudi2_snapshot("1.22.1-97ec1a4")))
    assert (result.status, result.finding) == (
        "ok",
        "driver 1.22.1-97ec1a4 matches habana-torch-plugin 1.22.0.740",
    )


def test_plugin_driver_match_skips_with_reasons(tmp_path: Path) -> None:
    no_plugin = stack.plugin_driver_match(make_ctx(tmp_path, fakes=False, snapshot=gaudi2_snapshot()))
    assert (no_plugin.status, no_plugin.finding) == (
        "skip",
        "habana-torch-plugin is not installed (see plugin.importable)",
    )
    no_map = stack.plugin_driver_match(make_ctx(tmp_path))
    assert (no_map.status, no_map.finding) == ("skip", "no driver version: no device query in this test")
    no_driver = stack.plugin_driver_match(make_ctx(tmp_path, snapshot=gaudi2_snapshot(driver=None)))
    assert no_driver.status == "skip"


def test_accelerate_new_enough(tmp_path: Path) -> None:
    result = stack.accelerate_version(make_ctx(tmp_path, site=[site(tmp_path, accelerate="1.5.0")]))
    assert (result.status, result.finding) == (
        "ok",
        "accelerate 1.5.0 (≥ 1.5.0, which is_torch_hpu_available() needs)",
    )


def test_old_accelerate_is_explained_as_silently_false(tmp_path: Path) -> None:
    result = stack.accelerate_version(make_ctx(tmp_path, site=[site(tmp_path, accelerate="1.4.0")]))
    assert result.status == "fail"
    assert result.finding == "accelerate 1.4.0 < 1.5.0: is_torch_hpu_available() is silently False"
    assert "without any warning" in result.explanation
    assert "accelerate>=1.5.0" in result.fix


def test_missing_accelerate_fails(tmp_path: Path) -> None:
    result = stack.accelerate_version(make_ctx(tmp_path, site_path=(str(tmp_path),)))
    assert (result.status, result.finding) == ("fail", "accelerate is not installed")


def test_bitsandbytes_on_gaudi(tmp_path: Path) -> None:
    ok = stack.bnb_gaudi(make_ctx(tmp_path, site=[site(tmp_path, bitsandbytes="0.50.2")]))
    assert (ok.status, ok.finding) == ("ok", "bitsandbytes 0.50.2: on Gaudi, 4-bit NF4 only")
    assert "FP4 fails" in ok.explanation
    old = stack.bnb_gaudi(make_ctx(tmp_path, site=[site(tmp_path, bitsandbytes="0.45.0")]))
    assert (old.status, old.finding) == ("warn", "bitsandbytes 0.45.0 predates Gaudi support (0.48.0)")
    missing = stack.bnb_gaudi(make_ctx(tmp_path, site_path=(str(tmp_path / "none"),)))
    assert missing.status == "warn" and "no 4-bit" in missing.finding


def test_bitsandbytes_on_first_generation_gaudi_warns(tmp_path: Path) -> None:
    snapshot = gaudi2_snapshot(name="HL-205", product="Gaudi")
    ctx = make_ctx(tmp_path, site=[site(tmp_path, bitsandbytes="0.50.2")], snapshot=snapshot)
    result = stack.bnb_gaudi(ctx)
    assert result.status == "warn"
    assert "first-generation Gaudi" in result.finding


def test_peft(tmp_path: Path) -> None:
    ok = stack.peft_installed(make_ctx(tmp_path, site=[site(tmp_path, peft="0.21.2")]))
    assert (ok.status, ok.finding) == ("ok", "peft 0.21.2")
    old = stack.peft_installed(make_ctx(tmp_path, site=[site(tmp_path, peft="0.10.0")]))
    assert old.status == "warn"
    missing = stack.peft_installed(make_ctx(tmp_path, site_path=(str(tmp_path / "none"),)))
    assert (missing.status, missing.finding) == (
        "warn",
        "peft is not installed: LoRA and QLoRA jobs cannot run",
    )
