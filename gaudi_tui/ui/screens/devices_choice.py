"""Choosing the cards a job may use: the chosen module IDs, checked against Intel's supported sets,
and the HABANA_VISIBLE_MODULES export line. Loaded when the map is built or a card is chosen."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from rich.text import Text

from gaudi_tui.core.devices import cardsets
from gaudi_tui.core.devices.model import Device
from gaudi_tui.core.devices.usage import CardUse
from gaudi_tui.ui.palette import Palette

NONE_CHOSEN = (
    "No cards chosen — space chooses the card under the cursor; jobs started from the panel "
    "use the chosen cards (HABANA_VISIBLE_MODULES)."
)


def modules_here(devices: Sequence[Device]) -> dict[int, Device]:
    """The cards by module ID (cards without one are left out)."""
    return {d.module_id: d for d in devices if d.module_id is not None}


def check(chosen: Collection[int], devices: Sequence[Device]) -> cardsets.CardSetCheck:
    """The chosen modules against the supported sets and the modules this host has (if known)."""
    return cardsets.check_modules(chosen, modules_here(devices).keys() or None)


def export_line(chosen: Collection[int], devices: Sequence[Device]) -> str:
    index_of = {m: d.index for m, d in modules_here(devices).items()}
    if not all(m in index_of for m in chosen):
        index_of = {}
    return cardsets.export_line(chosen, index_of or None)


def choice_text(
    chosen: Collection[int], devices: Sequence[Device], uses: Mapping[int, CardUse], colours: Palette
) -> Text:
    if not chosen:
        return Text(NONE_CHOSEN)
    here = modules_here(devices)
    found = cardsets.check_modules(chosen, here.keys() if here else None)
    text = Text()
    text.append(export_line(chosen, devices) + "\n")
    text.append(
        ("✓ " if found.ok else "✗ ") + found.message, style=colours.success if found.ok else colours.error
    )
    if not found.ok and found.nearest:
        text.append(" (n uses it)")
    for module in sorted(chosen):
        device = here.get(module)
        use = uses.get(device.index) if device else None
        if device is not None and use is not None and use.busy:
            text.append(
                f"\n⚠ card {device.index} (module {module}) is busy: {use.label()}", style=colours.warning
            )
    return text
