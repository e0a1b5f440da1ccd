"""Which cards a job may use: Intel's supported sets for partial-server distributed jobs.

On an 8-card Gaudi server a job uses one card, all 8, or one of the supported 2-/4-card sets of
module IDs: {0,1} {2,3} {4,5} {6,7} and {0,1,2,3} {4,5,6,7}. `HABANA_VISIBLE_MODULES` takes module
IDs; `HABANA_VISIBLE_DEVICES` takes indices (the `/dev/accel/accelN` numbers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

SUPPORTED_SETS: tuple[frozenset[int], ...] = (
    frozenset({0, 1}),
    frozenset({2, 3}),
    frozenset({4, 5}),
    frozenset({6, 7}),
    frozenset({0, 1, 2, 3}),
    frozenset({4, 5, 6, 7}),
    frozenset(range(8)),
)


@dataclass(frozen=True)
class CardSetCheck:
    modules: tuple[int, ...]
    ok: bool
    message: str
    nearest: tuple[int, ...] | None = None


def _fmt(modules: Iterable[int]) -> str:
    return "{" + ",".join(str(m) for m in sorted(modules)) + "}"


def check_modules(modules: Iterable[int], available: Iterable[int] | None = None) -> CardSetCheck:
    """Is this set of module IDs a supported card set? If not, say why and name the nearest valid one.

    `available`, when given, is the module IDs this host has: a chosen module it lacks is an error.
    """
    chosen = frozenset(modules)
    ordered = tuple(sorted(chosen))
    if not chosen:
        return CardSetCheck(ordered, False, "no card chosen")
    if any(m < 0 or m > 7 for m in chosen):
        return CardSetCheck(ordered, False, f"module IDs run from 0 to 7; got {_fmt(chosen)}")
    if available is not None and (missing := chosen - frozenset(available)):
        here = _fmt(available) if available else "none"
        return CardSetCheck(
            ordered, False, f"module {_fmt(missing)} is not on this host (modules here: {here})"
        )
    if len(chosen) == 1 or chosen in SUPPORTED_SETS:
        return CardSetCheck(ordered, True, f"{_fmt(chosen)} is a supported set")
    nearest = min(
        (s for s in SUPPORTED_SETS if len(s) >= len(chosen)),
        key=lambda s: (len(s - chosen) + len(chosen - s), len(s), sorted(s)),
    )
    if len(chosen) in (2, 4):
        why = f"{len(chosen)} cards must be one of the supported {len(chosen)}-card sets"
    else:
        why = f"{len(chosen)} cards is not a supported size (1, 2, 4 or 8)"
    message = f"{_fmt(chosen)} is not supported: {why}; nearest valid set is {_fmt(nearest)}"
    return CardSetCheck(ordered, False, message, tuple(sorted(nearest)))


def visible_modules(modules: Iterable[int]) -> str:
    """The `HABANA_VISIBLE_MODULES` value for these module IDs."""
    return ",".join(str(m) for m in sorted(set(modules)))


def visible_devices(modules: Iterable[int], index_of_module: Mapping[int, int]) -> str:
    """The `HABANA_VISIBLE_DEVICES` value (indices) for these module IDs, via the index ↔ module map."""
    return ",".join(str(index_of_module[m]) for m in sorted(set(modules)))


def export_line(modules: Iterable[int], index_of_module: Mapping[int, int] | None = None) -> str:
    """A shell line that selects these cards for a job started from the shell."""
    line = f"export HABANA_VISIBLE_MODULES={visible_modules(modules)}"
    if index_of_module:
        line += f" HABANA_VISIBLE_DEVICES={visible_devices(modules, index_of_module)}"
    return line
