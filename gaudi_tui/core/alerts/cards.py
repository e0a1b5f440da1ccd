"""Card alerts from the device feed: a card idle with memory held for `idle_held_s` (naming the
process and its owner), HBM near full, a scale-out port down, uncorrected ECC errors rising.

`CardRules.update` takes each snapshot with the card holders the /proc scan found and returns the
alerts whose condition holds now; the caller sends them through the ledger, whose keys make each
go out once (per card and holders; a card alert with the same key again after `repeat_s`).
"""

from __future__ import annotations

from dataclasses import dataclass

from gaudi_tui.core.alerts.config import AlertConfig
from gaudi_tui.core.alerts.jobs import duration
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.devices.holders import CardHolder
from gaudi_tui.core.devices.model import Device, DeviceSnapshot
from gaudi_tui.core.devices.usage import CardUse, card_uses


@dataclass(frozen=True)
class Holder:
    pid: int
    name: str
    user: str | None
    started: float | None

    def words(self) -> str:
        owner = self.user or "an owner this user cannot see"
        return f"PID {self.pid} {self.name} ({owner})"


def holders_of(use: CardUse | None) -> tuple[Holder, ...]:
    """Who holds a card (`usage.card_uses`): the /proc scan's holders, else hl-smi's process table."""
    if use is None:
        return ()
    found = {h.pid: Holder(h.pid, h.command.split(" ")[0], h.user, h.started) for h in use.holders}
    for proc in use.processes:
        if proc.pid not in found:
            found[proc.pid] = Holder(proc.pid, proc.command or proc.name, proc.user, proc.started)
    return tuple(found[pid] for pid in sorted(found))


def _identity(held_by: tuple[Holder, ...]) -> str:
    return ",".join(f"{h.pid}@{h.started or 0:.0f}" for h in held_by)


class CardRules:
    def __init__(self, config: AlertConfig, host: str) -> None:
        self.config, self.host = config, host
        self.idle_since: dict[tuple[int, str], float] = {}
        """(card, its holders) → when it was first seen idle with memory held."""
        self.ecc: dict[int, int] = {}

    def update(self, snapshot: DeviceSnapshot, holders: tuple[CardHolder, ...], now: float) -> list[Alert]:
        alerts: list[Alert] = []
        idle_now: set[tuple[int, str]] = set()
        uses = card_uses(snapshot, holders)
        for device in snapshot.devices:
            held_by = holders_of(uses.get(device.index))
            alerts += self._idle_held(device, held_by, now, idle_now)
            alerts += self._hbm(device, held_by)
            alerts += self._ecc(device)
        self.idle_since = {k: v for k, v in self.idle_since.items() if k in idle_now}
        alerts += self._ports(snapshot)
        return alerts

    def _subject(self, index: int) -> str:
        return f"{self.host} card {index}"

    def _idle_held(
        self, device: Device, held_by: tuple[Holder, ...], now: float, idle_now: set[tuple[int, str]]
    ) -> list[Alert]:
        used, util = device.memory_used_mib, device.utilization_pct
        if used is None or util is None or used <= self.config.held_mib or util > self.config.idle_util_pct:
            return []
        key = (device.index, _identity(held_by))
        idle_now.add(key)
        since = self.idle_since.setdefault(key, now)
        if now - since < self.config.idle_held_s:
            return []
        who = "; ".join(h.words() for h in held_by) or "a process this user cannot see"
        text = f"{self._subject(device.index)} idle for {duration(now - since)} with {used} MiB held by {who}"
        return [
            Alert("idle_held", "warning", self._subject(device.index), "Card idle with memory held", text,
                  f"idle-held:{self.host}:{device.index}:{key[1]}")
        ]  # fmt: skip

    def _hbm(self, device: Device, held_by: tuple[Holder, ...]) -> list[Alert]:
        used, total = device.memory_used_mib, device.memory_total_mib
        if not used or not total or 100.0 * used / total < self.config.hbm_full_pct:
            return []
        who = "; ".join(h.words() for h in held_by)
        text = f"{self._subject(device.index)}: {used} of {total} MiB in use ({100.0 * used / total:.1f} %)"
        return [
            Alert("hbm_full", "warning", self._subject(device.index), "HBM near full",
                  text + (f", by {who}" if who else ""), f"hbm-full:{self.host}:{device.index}:{_identity(held_by)}")
        ]  # fmt: skip

    def _ecc(self, device: Device) -> list[Alert]:
        count = device.uncorrected_errors
        if count is None:
            return []
        before = self.ecc.get(device.index)
        self.ecc[device.index] = count
        if before is None or count <= before:
            return []
        text = f"{self._subject(device.index)}: uncorrected ECC errors {before} → {count}"
        return [Alert("ecc_rising", "critical", self._subject(device.index), "ECC errors rising", text,
                      f"ecc:{self.host}:{device.index}:{count}")]  # fmt: skip

    def _ports(self, snapshot: DeviceSnapshot) -> list[Alert]:
        alerts = []
        for card in snapshot.links:
            down = card.external_down if card.types_known else card.down
            for port in down:
                where = f"{self.host} card {card.index}"
                alerts.append(
                    Alert("port_down", "critical", where, "Scale-out port down", f"{where}: port {port} is down",
                          f"port-down:{self.host}:{card.index}:{port}")
                )  # fmt: skip
        return alerts
