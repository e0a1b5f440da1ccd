"""The one version parser: release numbers from every shape the Gaudi stack and pip print."""

from __future__ import annotations

import pytest

from gaudi_tui.core.versions import at_least, dotted, minor, release


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("1.22.0.740", (1, 22, 0, 740)),  # habana-torch-plugin
        ("1.22.1-97ec1a4", (1, 22, 1)),  # driver
        ("2.6.0+hpu.1.20.0.543.git4952fce", (2, 6, 0)),  # Intel's torch
        ("v1.21.0", (1, 21, 0)),  # optimum-habana warnings
        ("1.5.0rc1", (1, 5, 0)),  # a pre-release of the floor
        (" 4.51.3\n", (4, 51, 3)),
        ("N/A", ()),
        ("", ()),
        (None, ()),
    ],
)
def test_release_numbers_from_every_shape(text: str | None, numbers: tuple[int, ...]) -> None:
    assert release(text) == numbers


def test_floor_comparisons_and_printing() -> None:
    assert minor("1.22.1-97ec1a4") == (1, 22)
    assert at_least("1.5.0", (1, 5, 0)) and at_least("1.10.0", (1, 5, 0))
    assert not at_least("1.4.9", (1, 5, 0)) and not at_least(None, (1, 5, 0)) and not at_least("N/A", (1,))
    assert dotted((1, 5, 0)) == "1.5.0"
