"""Intel's supported card sets for partial-server distributed jobs."""

from __future__ import annotations

import pytest

from gaudi_tui.core.devices.cardsets import check_modules, export_line, visible_devices, visible_modules


@pytest.mark.parametrize(
    "modules", [{0}, {5}, {0, 1}, {2, 3}, {4, 5}, {6, 7}, {0, 1, 2, 3}, {4, 5, 6, 7}, set(range(8))]
)
def test_supported_sets(modules: set[int]) -> None:
    assert check_modules(modules).ok


@pytest.mark.parametrize(
    ("modules", "nearest", "why"),
    [
        ({1, 2}, (0, 1), "2-card sets"),
        ({3, 4}, (2, 3), "2-card sets"),
        ({0, 1, 2, 4}, (0, 1, 2, 3), "4-card sets"),
        ({0, 1, 2}, (0, 1, 2, 3), "not a supported size"),
        ({0, 1, 2, 3, 4}, tuple(range(8)), "not a supported size"),
    ],
)
def test_unsupported_sets_name_the_nearest_valid_one(
    modules: set[int], nearest: tuple[int, ...], why: str
) -> None:
    result = check_modules(modules)
    assert not result.ok
    assert result.nearest == nearest
    assert why in result.message
    assert "nearest valid set is {" + ",".join(map(str, nearest)) + "}" in result.message


def test_empty_and_out_of_range() -> None:
    assert check_modules([]).message == "no card chosen"
    assert not check_modules([8]).ok


def test_environment_values_use_module_ids_and_indices() -> None:
    # The mapping recorded in gaudi_tui/data/hl-smi/gaudi2e-index-module-1.24.0.csv: index ≠ module ID.
    index_of_module = {2: 0, 6: 1, 3: 2, 7: 3, 0: 4, 4: 5, 5: 6, 1: 7}
    assert visible_modules([1, 0]) == "0,1"
    assert visible_devices([0, 1], index_of_module) == "4,7"
    assert (
        export_line([0, 1], index_of_module) == "export HABANA_VISIBLE_MODULES=0,1 HABANA_VISIBLE_DEVICES=4,7"
    )
