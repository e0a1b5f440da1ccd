"""Replay: the device feed from recorded real hl-smi outputs, for seeing the panel without a card.

`gaudi-tui --replay gaudi2` (and `make demo`) feeds the Devices screen from the recordings shipped
in `gaudi_tui/data/hl-smi/` (SOURCES.md says where each was published), read through the same
path as `gaudi-tui devices --input` (`parse_any` + `merge`). A replay has several frames, each one
recorded output (plus the host facts merged into it); the feed cycles through them so the values
and sparklines move. Every snapshot says `source="replay"` and names its files.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gaudi_tui.core.devices.model import DeviceSnapshot
from gaudi_tui.core.devices.monitor import MonitorUpdate
from gaudi_tui.core.devices.parsers.detect import parse_any
from gaudi_tui.core.devices.reading import merge
from gaudi_tui.core.devices.sources.host import HostReader, HostStats
from gaudi_tui.data import HLSMI_SAMPLES

_GAUDI2_FACTS = ("gaudi2e-index-module-1.24.0.csv", "gaudi2-topo-cpu-numa.txt")
_LINKS_UP = ("made-gaudi2-x8-nic-link-up.txt", "made-gaudi2-x8-nic-ports.txt")
_LINKS_DOWN = ("made-gaudi2-x8-nic-link-card3-port8-down.txt", "made-gaudi2-x8-nic-ports.txt")
MADE = "made-"
"""Files whose names start so are made from documentation, not recorded (SOURCES.md)."""
REPLAYS: dict[str, tuple[tuple[str, ...], ...]] = {
    # Three Gaudi 2 ×8 hosts: idle, one process, three cards busy. Module IDs and NUMA nodes are
    # not in those tables; they come from an 8-card index→module map and a Gaudi 2 `topo -c -N`.
    "gaudi2": tuple(
        (table, *_GAUDI2_FACTS)
        for table in (
            "gaudi2-hl225-x8-1.12.1-table.txt",
            "gaudi2-hl225-x8-1.16.0-process-table.txt",
            "gaudi2-hl225-x8-1.20.0-busy-table.txt",
        )
    ),
    "gaudi2e": (("gaudi2e-hl288e-x8-1.24.0-table.txt", "gaudi2e-index-module-1.24.0.csv"),),
    "gaudi1": (("gaudi1-hl205-x8-1.4.1-table.txt",), ("gaudi1-hl205-x8-1.18.0-query.csv",)),
    # The busy Gaudi 2 host with its NIC links: every port up for three frames, then card 3 loses
    # scale-out port 8 and stays so. The link and port files are MADE FROM DOCUMENTATION (no real
    # recording of a DOWN port or of `-n ports` exists); SOURCES.md says from what.
    "gaudi2-port-down": (
        *(("gaudi2-hl225-x8-1.20.0-busy-table.txt", *_GAUDI2_FACTS, *_LINKS_UP),) * 3,
        ("gaudi2-hl225-x8-1.20.0-busy-table.txt", *_GAUDI2_FACTS, *_LINKS_DOWN),
    ),
}
HOLD_LAST = {"gaudi2-port-down"}
"""Replays that play once and then stay on their last frame (a port that went down stays down)."""
MISSING = {
    "gaudi3": "no real Gaudi 3 hl-smi recording ships with gaudi-tui (none published that could be "
    "copied with its source, and gaudi-tui does not make one up)",
}


class ReplayError(ValueError):
    """The replay asked for does not exist or its files hold no card data."""


@dataclass(frozen=True)
class Replay:
    name: str
    frames: tuple[tuple[Path, ...], ...]
    hold_last: bool = False

    @property
    def made(self) -> bool:
        """Some of its files are made from documentation, not recorded."""
        return any(p.name.startswith(MADE) for frame in self.frames for p in frame)

    def label(self) -> str:
        if self.made:
            return f"{self.name} (links made from docs)"
        return f"{self.name} (recorded hl-smi, not this host)"


def available() -> str:
    return ", ".join(REPLAYS)


def resolve(name_or_file: str) -> Replay:
    """A shipped replay by name (`gaudi2`), or a saved hl-smi output FILE as a one-frame replay."""
    if name_or_file in REPLAYS:
        frames = tuple(tuple(HLSMI_SAMPLES / f for f in frame) for frame in REPLAYS[name_or_file])
        return Replay(name_or_file, frames, name_or_file in HOLD_LAST)
    if name_or_file in MISSING:
        raise ReplayError(
            f"no {name_or_file} replay: {MISSING[name_or_file]}. Available: {available()}, or a FILE "
            "holding a saved hl-smi output."
        )
    path = Path(name_or_file).expanduser()
    if not path.is_file():
        raise ReplayError(
            f"{name_or_file!r} is neither a replay nor a file. Available replays: {available()}; "
            "or give the path of a saved hl-smi output (table, -Q CSV, -q detail)."
        )
    return Replay(path.name, ((path,),))


def snapshots(replay: Replay) -> list[DeviceSnapshot]:
    """Each frame read as `devices --input` reads files; raises ReplayError when one has no cards."""
    out = []
    for frame in replay.frames:
        readings = []
        for path in frame:
            try:
                readings.append(parse_any(path.read_text(encoding="utf-8", errors="replace")))
            except OSError as error:
                raise ReplayError(f"cannot read {path}: {error.strerror}") from error
        reading = merge(readings)
        if not reading.devices:
            why = reading.errors[0] if reading.errors else "no card data found"
            raise ReplayError(f"{frame[0].name}: {why}")
        snapshot = reading.to_snapshot("replay")
        out.append(replace(snapshot, recordings=tuple(p.name for p in frame)))
    return out


class ReplayFeed:
    """Posts one recorded frame per interval, in turn, with the live host row; the same
    `run()`/`on_update` shape as `DeviceMonitor`, so the Devices screen draws it unchanged."""

    def __init__(
        self,
        frames: Sequence[DeviceSnapshot],
        interval: float,
        on_update: Callable[[MonitorUpdate], object],
        cancel: threading.Event,
        host_reader: Callable[[], HostStats | None] | None = None,
        hold_last: bool = False,
    ) -> None:
        self.frames, self.interval, self.on_update, self.cancel = frames, interval, on_update, cancel
        self.read_host = host_reader or HostReader(min_gap=interval).read
        self.hold_last = hold_last

    def run(self) -> None:
        tick = 0
        while not self.cancel.is_set():
            at = min(tick, len(self.frames) - 1) if self.hold_last else tick % len(self.frames)
            self.on_update(MonitorUpdate(self.frames[at], self.read_host(), ()))
            tick += 1
            self.cancel.wait(self.interval)
