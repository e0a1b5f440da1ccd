"""plugin.importable, transformers.hpu_available, hccl.available: real child processes against the
fake habana_frameworks (tests/fakes), fake metadata and broken packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaudi_tui.core.doctor.checks import by_id
from gaudi_tui.core.doctor.model import CheckResult
from gaudi_tui.core.doctor.runner import run_checks
from tests.doctor.hosts import fake_dist, make_ctx

ISOLATED = [by_id()[i] for i in ("plugin.importable", "transformers.hpu_available", "hccl.available")]
HCCL_ERROR = "libhccl.so: cannot open shared object file: No such file or directory"


def run_isolated(
    tmp: Path, env: dict[str, str | None] | None = None, checks=ISOLATED, **kwargs
) -> dict[str, CheckResult]:
    return {r.id: r for r in run_checks(checks, make_ctx(tmp, env, **kwargs))}


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CheckResult]:
    return run_isolated(tmp_path_factory.mktemp("healthy"))


@pytest.fixture(scope="module")
def no_card_no_hccl(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CheckResult]:
    env = {"FAKE_HPU_CARDS": "0", "FAKE_HCCL_ERROR": HCCL_ERROR}
    return run_isolated(tmp_path_factory.mktemp("broken"), env, checks=ISOLATED[1:])


def test_plugin_imports(healthy: dict[str, CheckResult]) -> None:
    result = healthy["plugin.importable"]
    assert (result.status, result.finding) == (
        "ok",
        "habana_frameworks.torch imports (habana-torch-plugin 1.22.0.740)",
    )
    assert "tests/fakes/habana_frameworks/__init__.py" in result.explanation


def test_hpu_available(healthy: dict[str, CheckResult]) -> None:
    result = healthy["transformers.hpu_available"]
    assert (result.status, result.finding) == ("ok", "is_torch_hpu_available() is True: 8 card(s) (GAUDI2)")


def test_hccl_available(healthy: dict[str, CheckResult]) -> None:
    assert healthy["hccl.available"].status == "ok"


def test_hpu_unavailable_without_a_card(no_card_no_hccl: dict[str, CheckResult]) -> None:
    result = no_card_no_hccl["transformers.hpu_available"]
    assert result.status == "fail"
    assert (
        result.finding
        == "is_torch_hpu_available() is False: torch.hpu.is_available() is False: no card is visible to this process"
    )
    assert "cards.busy" in result.fix


def test_hccl_import_error(no_card_no_hccl: dict[str, CheckResult]) -> None:
    result = no_card_no_hccl["hccl.available"]
    assert result.status == "fail"
    assert (
        result.finding
        == f"`import habana_frameworks.torch.distributed.hccl` fails: ImportError: {HCCL_ERROR}"
    )


def test_without_habana_frameworks(tmp_path: Path) -> None:
    results = run_isolated(tmp_path, fakes=False)
    assert (results["plugin.importable"].status, results["plugin.importable"].finding) == (
        "fail",
        "No module named 'habana_frameworks'",
    )
    assert results["transformers.hpu_available"].finding == (
        "is_torch_hpu_available() is False: habana_frameworks is not installed (see plugin.importable)"
    )
    assert results["hccl.available"].status == "skip"


def test_old_accelerate_makes_hpu_silently_unavailable(tmp_path: Path) -> None:
    site = fake_dist(tmp_path / "site", "accelerate", "1.4.0")
    result = run_checks(ISOLATED[1:2], make_ctx(tmp_path, site=[site]))[0]
    assert result.status == "fail"
    assert result.finding == (
        "is_torch_hpu_available() is False: accelerate 1.4.0 < 1.5.0 makes it silently False (see accelerate.version)"
    )
    assert result.fix == "pip install -U 'accelerate>=1.5.0'"


def test_plugin_that_fails_to_import(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    (broken / "habana_frameworks" / "torch").mkdir(parents=True)
    (broken / "habana_frameworks" / "__init__.py").write_text("")
    (broken / "habana_frameworks" / "torch" / "__init__.py").write_text(
        "raise ImportError('libhabana_pytorch_plugin.so: undefined symbol: _ZN3c104impl3cow11cow_deleterEPv')\n"
    )
    result = run_checks(ISOLATED[:1], make_ctx(tmp_path, site=[broken], fakes=False))[0]
    assert result.status == "fail"
    assert result.finding.startswith(
        "habana_frameworks is installed but `import habana_frameworks.torch` fails: ImportError: "
    )
    assert "undefined symbol" in result.finding


def test_transformers_that_fails_to_import(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    (broken / "transformers" / "utils").mkdir(parents=True)
    (broken / "transformers" / "__init__.py").write_text(
        "raise ImportError('cannot import name GenerationMixin')\n"
    )
    result = run_checks(ISOLATED[1:2], make_ctx(tmp_path, site=[broken]))[0]
    assert result.status == "fail"
    assert (
        result.finding == "transformers cannot be imported: ImportError: cannot import name GenerationMixin"
    )
