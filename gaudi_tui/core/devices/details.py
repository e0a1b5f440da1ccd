"""What changes slowly and costs a child process per card: NIC links and hl-smi's process table.

Never in the hot refresh: `DetailsPoller.run()` (its own thread, started after the panel's first
frame) reads every `every` seconds, with one-shot children each ended after `timeout` seconds:
`hl-smi -n link -i <bus>` per card (all cards at once), `hl-smi -n ports -i <bus>` once per card
(which ports are external does not change), and the `hl-smi` table for its process rows. On HLML,
the links come from `hlmlDeviceGetMacAddrInfo` (the port and external-port masks) and
`hlmlDeviceNicGetLink` (habana-pyhlml 1.24), as Intel's exporter reads them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gaudi_tui.core.devices.links import card_links
from gaudi_tui.core.devices.model import CardLinks, Device, DeviceProcess, Port
from gaudi_tui.core.devices.parsers.parse_nic import NO_CARD, parse_nic
from gaudi_tui.core.devices.parsers.parse_table import parse_table
from gaudi_tui.core.devices.sources.hlsmi_once import run_once

EVERY_S = 30.0
"""Seconds between two reads of links and processes."""
ONE_SHOT_S = 5.0
"""Limit of each one-shot hl-smi child (the card's `-n link`, `-n ports`, the table)."""
MAX_PORTS = 128
"""HLML's port masks are two 64-bit words."""


@dataclass(frozen=True)
class CardDetails:
    links: tuple[CardLinks, ...] = ()
    link_errors: tuple[str, ...] = ()
    table: tuple[DeviceProcess, ...] | None = None
    """hl-smi's process rows; None when the table could not be read (`table_error` says why)."""
    table_error: str | None = None
    read_at: float = field(default_factory=time.time)


def _one_card(
    executable: str,
    bus: str,
    timeout: float,
    cancel: threading.Event | None,
    types: dict[str, dict[int, str]],
) -> tuple[dict[int, str] | None, str | None]:
    """One card's port states (and, the first time, its port types into `types`); or why not."""
    link = run_once(executable, ["-n", "link", "-i", bus], timeout, cancel)
    if link.fault is not None:
        return None, f"`hl-smi -n link -i {bus}`: {link.fault.what}"
    found = parse_nic(link.stdout).nic_ports
    states = found.get(NO_CARD) or next(iter(found.values()), None)
    if not states:
        return None, f"`hl-smi -n link -i {bus}` printed no `port N: UP|DOWN` line"
    if bus not in types:
        ports = run_once(executable, ["-n", "ports", "-i", bus], timeout, cancel)
        if ports.fault is None:
            said = parse_nic(ports.stdout).nic_port_types
            kinds = said.get(NO_CARD) or next(iter(said.values()), None)
            if kinds:
                types[bus] = dict(kinds)
    return dict(states), None


def read_links_hlsmi(
    executable: str,
    devices: Sequence[Device],
    timeout: float = ONE_SHOT_S,
    cancel: threading.Event | None = None,
    types: dict[str, dict[int, str]] | None = None,
) -> tuple[tuple[CardLinks, ...], tuple[str, ...]]:
    """Every card's links through one-shot hl-smi children, all cards at once (so the wait is the
    slowest card's, at most about 2 × `timeout`). `types` caches `-n ports` between calls."""
    types = {} if types is None else types
    buses = [d.bus_id for d in devices if d.bus_id]
    if not buses:
        return (), ("no card has a bus ID to ask `hl-smi -n link -i` about",)
    with ThreadPoolExecutor(max_workers=min(8, len(buses)), thread_name_prefix="hl-smi -n") as pool:
        answers = list(pool.map(lambda bus: _one_card(executable, bus, timeout, cancel, types), buses))
    states = {bus: found for bus, (found, _) in zip(buses, answers, strict=True) if found}
    errors = [why for _, why in answers if why]
    links, link_errors = card_links(states, {b: types[b] for b in states if b in types}, devices)
    return links, (*errors, *link_errors)


def read_links_hlml(lib: Any) -> tuple[tuple[CardLinks, ...], tuple[str, ...]]:
    """Links through an initialised pyhlml: the port mask and external-port mask, then each port's link."""
    links, errors = [], []
    try:
        count = lib.hlmlDeviceGetCount()
    except Exception as error:  # pyhlml raises HLMLError subclasses
        return (), (f"HLML: {error}",)
    for position in range(count):
        try:
            handle = lib.hlmlDeviceGetHandleByIndex(position)
            index = int(lib.hlmlDeviceGetMinorNumber(handle))
            bus = lib.hlmlDeviceGetPCIInfo(handle).bus_id
            bus = bus.decode(errors="replace").rstrip("\x00") if isinstance(bus, bytes) else str(bus)
            (low, high), (ext_low, ext_high) = lib.hlmlDeviceGetMacAddrInfo(handle)
        except Exception as error:
            errors.append(f"HLML card {position}: {error}")
            continue
        mask, external = low | (high << 64), ext_low | (ext_high << 64)
        ports, unread = [], []
        for number in range(MAX_PORTS):
            if mask >> number & 1:
                try:
                    up = bool(lib.hlmlDeviceNicGetLink(handle, number))
                except Exception as error:  # unknown, not down (Intel's exporter would serve 0)
                    unread.append(f"{number} ({error})")
                    continue
                ports.append(Port(number, up, "external" if external >> number & 1 else "internal"))
        if unread:
            errors.append(f"HLML card {index}: link of port {', '.join(unread[:3])} not readable")
        if ports:
            links.append(CardLinks(index, bus, tuple(ports)))
    return tuple(links), tuple(errors)


def read_table(
    executable: str, timeout: float = ONE_SHOT_S, cancel: threading.Event | None = None
) -> tuple[tuple[DeviceProcess, ...] | None, str | None]:
    """hl-smi's process rows from one `hl-smi` (the table), or why not."""
    table = run_once(executable, [], timeout, cancel)
    if table.fault is not None:
        return None, f"`hl-smi`: {table.fault.what}"
    return parse_table(table.stdout).processes, None


class DetailsPoller:
    """Reads links and the process table now and every `every` seconds until `cancel` is set, while
    shown: `hide()` stops the reads (the panel's other screens do not show them; a round costs
    17 hl-smi children on 8 cards), `show()` reads again at once if the last read is older than
    `every`.

    `devices()` gives the cards the device feed sees (their bus IDs are asked about); `hlml()` the
    initialised pyhlml module when the feed reads HLML, else None."""

    def __init__(
        self,
        devices: Callable[[], Sequence[Device]],
        on_details: Callable[[CardDetails], object],
        cancel: threading.Event,
        executable: str = "hl-smi",
        every: float = EVERY_S,
        timeout: float = ONE_SHOT_S,
        hlml: Callable[[], Any] | None = None,
    ) -> None:
        self.devices, self.on_details, self.cancel = devices, on_details, cancel
        self.executable, self.every, self.timeout = executable, every, timeout
        self.hlml = hlml or (lambda: None)
        self.types: dict[str, dict[int, str]] = {}
        self._now = threading.Event()
        self._shown = threading.Event()
        self._shown.set()

    def request(self) -> None:
        """Read again at once (after a stop, say)."""
        self._now.set()

    def hide(self) -> None:
        self._shown.clear()

    def show(self) -> None:
        self._shown.set()

    def read(self, devices: Sequence[Device]) -> CardDetails:
        lib = self.hlml()
        if lib is not None and hasattr(lib, "hlmlDeviceNicGetLink"):
            links, errors = read_links_hlml(lib)
        else:
            links, errors = read_links_hlsmi(self.executable, devices, self.timeout, self.cancel, self.types)
        table, why = read_table(self.executable, self.timeout, self.cancel)
        return CardDetails(links, errors, table, why)

    def run(self) -> None:
        while not self.cancel.is_set():
            if not self._shown.is_set():
                self._shown.wait(0.5)  # 0.5 s: how soon a cancel is seen while hidden
                continue
            devices = self.devices()
            if not devices:  # the feed has no card yet (or none at all): look again soon
                self.cancel.wait(0.5)
                continue
            details = self.read(devices)
            if self.cancel.is_set():
                return
            self.on_details(details)
            self._now.clear()
            deadline = time.monotonic() + self.every
            while not self.cancel.is_set() and not self._now.is_set() and time.monotonic() < deadline:
                self._now.wait(min(0.5, max(0.0, deadline - time.monotonic())))
