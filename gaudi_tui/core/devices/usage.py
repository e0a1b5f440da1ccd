"""Who uses each card: a visible holder, a process hl-smi listed, or busy with no visible holder.

hl-smi's memory.used is HBM *reserved* on the card: an idle card shows a small baseline (512 MiB
Gaudi, 768 MiB Gaudi 2/2E, 672 MiB Gaudi 3) and a framework reserves nearly all HBM when it
starts, so memory above `BUSY_MIB` means the card is taken, whatever its utilization.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from gaudi_tui.core.devices.model import Device, DeviceProcess, DeviceSnapshot

if TYPE_CHECKING:
    from gaudi_tui.core.devices.holders import CardHolder

BUSY_MIB = 2048
HIDDEN = (
    "HBM is reserved but no process visible to you holds /dev/accel/accel{index}: it belongs to another "
    "user or a container (without root, /proc hides their open files and hl-smi their processes). "
    "Run `sudo hl-smi` on the host to see it."
)

State = Literal["free", "held", "busy-hidden"]


@dataclass(frozen=True)
class CardUse:
    index: int
    state: State
    holders: tuple[CardHolder, ...] = ()
    processes: tuple[DeviceProcess, ...] = ()

    @property
    def busy(self) -> bool:
        return self.state != "free"

    def label(self) -> str:
        """The first process (a holder you can see first) and how many more the card has."""
        others = max(len(self.holders), len(self.processes)) - 1
        more = f" +{others}" if others > 0 else ""
        if self.holders:
            first = self.holders[0]
            return f"{_short(first.command)} ({first.pid}){more}"
        if self.processes:
            return f"{self.processes[0].name} ({self.processes[0].pid}){more}"
        return "busy, holder not visible" if self.state == "busy-hidden" else "—"

    def explanation(self) -> str | None:
        return HIDDEN.format(index=self.index) if self.state == "busy-hidden" else None


def _short(command: str, width: int = 24) -> str:
    words = command.split()
    if not words:
        return "?"
    program = words[0].rsplit("/", 1)[-1]
    text = " ".join([program, *words[1:]])
    return text if len(text) <= width else text[: width - 1] + "…"


def memory_busy(device: Device) -> bool:
    return device.memory_used_mib is not None and device.memory_used_mib > BUSY_MIB


def card_uses(snapshot: DeviceSnapshot, holders: Iterable[CardHolder]) -> dict[int, CardUse]:
    by_card: dict[int, list[CardHolder]] = {}
    for holder in holders:
        by_card.setdefault(holder.index, []).append(holder)
    uses = {}
    for device in snapshot.devices:
        mine = tuple(by_card.get(device.index, ()))
        processes = tuple(p for p in snapshot.processes if p.index == device.index)
        if mine or processes:
            state: State = "held"
        elif memory_busy(device):
            state = "busy-hidden"
        else:
            state = "free"
        uses[device.index] = CardUse(device.index, state, mine, processes)
    return uses


def holder_processes(holders: Iterable[CardHolder]) -> tuple[DeviceProcess, ...]:
    """Holders as the snapshot's `processes` (no per-process memory: /proc does not tell it)."""
    return tuple(DeviceProcess(h.index, h.pid, _short(h.command, 60), None, h.user) for h in holders)
