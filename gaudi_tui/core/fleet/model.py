"""Hosts, cards and health flags from Intel-exporter samples (a Prometheus answer or a saved /metrics).

Hosts are told apart by Prometheus's `instance` label, cards by `id`. Health rules:
- card: `hot` at or past its slowdown threshold (`habanalabs_temperature_threshold_slowdown`, else
  `DEFAULT_SLOWDOWN_C`); `over cap` when power exceeds the default limit; `ECC rows` when
  `habanalabs_pending_rows_state` is 1 (rows wait for replacement: the card needs a reset);
  `scale-out down` when an external port's `habanalabs_nic_port_status` is 0 (a multi-host job
  using the card fails, so the card does not count for multi-host job sizes);
- host: `down` when its target's `up` is 0; `stale` when the target answers but sends no card
  (Intel's exporter does that when its driver or kubelet lookup fails) or has left `up`;
  `N missing` when it reports fewer cards than it did in the last hour (`usual`).
A card is free when its HBM use is at most `usage.BUSY_MIB` (a framework reserves nearly all HBM)
and no Kubernetes pod holds it. Which job sizes fit follows Intel's card sets (`cardsets`), with
the exporter's `id` standing in for the module ID (the exporter has no module-ID label).
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Literal, NamedTuple, TypeVar

from gaudi_tui.core.devices.cardsets import SUPPORTED_SETS
from gaudi_tui.core.devices.usage import BUSY_MIB
from gaudi_tui.core.fleet import metrics as m
from gaudi_tui.core.fleet.samples import CardValue, HostValue
from gaudi_tui.core.untrusted import vector

DEFAULT_SLOWDOWN_C = 90.0
"""Used when the exporter gives no slowdown threshold (ours never does; hl-smi does not print it):
the Devices screen's red temperature level."""
JOB_SIZES = (1, 2, 4, 8, 16)
HOST_CARDS = 8
"""A job of more cards than this spans hosts: it takes whole hosts of 8 cards (Intel's rule), each
with its scale-out ports up."""
FREE_IDS = 32
"""The card ids (0 to 31) a host's free cards are told by on the Fleet screen, one bit each of the
number Prometheus sums per host (`fetch.OVERVIEW_QUERIES`); a Gaudi host's are 0 to 7."""
HostState = Literal["up", "down", "stale"]


class Card(NamedTuple):
    """A named tuple, not a dataclass: a refresh builds 4,096 of them (three times faster to make)."""

    id: int
    serial: str = ""
    uuid: str = ""
    pod: str = ""
    utilization_pct: float | None = None
    memory_used_bytes: float | None = None
    memory_total_bytes: float | None = None
    power_mw: float | None = None
    power_limit_mw: float | None = None
    temperature_c: float | None = None
    slowdown_c: float | None = None
    ecc_pending: bool | None = None
    ports_down: tuple[int, ...] = ()
    """External (scale-out) NIC ports that are down."""
    flags: tuple[str, ...] = ()

    @property
    def free(self) -> bool:
        return (
            not self.pod and self.memory_used_bytes is not None and self.memory_used_bytes <= BUSY_MIB * m.MIB
        )

    def ratio(self, metric: str) -> float | None:
        """0..1 (or more) of the chosen colouring metric: utilization, hbm, power (vs cap), temperature
        (vs slowdown)."""
        if metric == "utilization":
            return None if self.utilization_pct is None else self.utilization_pct / 100
        if metric == "hbm":
            return _share(self.memory_used_bytes, self.memory_total_bytes)
        if metric == "power":
            return _share(self.power_mw, self.power_limit_mw)
        return _share(self.temperature_c, self.slowdown_c or DEFAULT_SLOWDOWN_C)


def _share(part: float | None, whole: float | None) -> float | None:
    return None if part is None or not whole else part / whole


def fits(cards: int, free_ids: Iterable[int], scale_out_down: Iterable[int], size: int) -> bool:
    """Can a job of `size` cards start on a host of `cards` cards now, on free cards forming one of
    Intel's sets? For a multi-host size (more than 8): can this host take its whole-host share, every
    card free and none with a scale-out port down?"""
    free = frozenset(free_ids)
    if size > HOST_CARDS:
        return cards == HOST_CARDS and len(free - set(scale_out_down)) == HOST_CARDS
    if size == 1:
        return bool(free)
    return any(len(s) == size and s <= free for s in SUPPORTED_SETS)


class HostSummary(NamedTuple):
    """One host as the Fleet screen lists it, from per-host aggregates that Prometheus computes (no
    per-card values): what a screen refresh asks for every host. A named tuple: one per host each
    refresh."""

    name: str
    job: str = ""
    state: HostState = "up"
    cards: int = 0
    usual_cards: int = 0
    scale_out_down: tuple[int, ...] = ()
    """Cards with an external NIC port down."""
    flags: tuple[str, ...] = ()
    mean_util: float | None = None
    free_ids: tuple[int, ...] = ()
    """Last: each refresh makes every summary anew with the free cards of that refresh, from the
    other fields taken once (`WithFree`)."""

    def fits(self, size: int) -> bool:
        return fits(self.cards, self.free_ids, self.scale_out_down, size)


@dataclass(frozen=True)
class Overview:
    """Every host's summary (what the Fleet screen lists), and the banner lines."""

    source: str
    hosts: tuple[HostSummary, ...] = ()
    problems: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()


@dataclass(frozen=True)
class Host:
    name: str
    job: str = ""
    state: HostState = "up"
    usual_cards: int = 0
    cards: tuple[Card, ...] = ()
    flags: tuple[str, ...] = ()

    @property
    def free_ids(self) -> tuple[int, ...]:
        return tuple(c.id for c in self.cards if c.free) if self.state == "up" else ()

    def fits(self, size: int) -> bool:
        return fits(len(self.cards), self.free_ids, [c.id for c in self.cards if c.ports_down], size)

    def summary(self) -> HostSummary:
        utils = [c.utilization_pct for c in self.cards if c.utilization_pct is not None]
        return HostSummary(
            self.name,
            self.job,
            self.state,
            len(self.cards),
            self.usual_cards,
            tuple(c.id for c in self.cards if c.ports_down),
            self.flags,
            sum(utils) / len(utils) if utils else None,
            self.free_ids,
        )

    def down_ports(self) -> list[str]:
        """`card 3: port 8` for every card with scale-out ports down."""
        return [f"card {c.id}: port {', '.join(map(str, c.ports_down))}" for c in self.cards if c.ports_down]

    def to_json(self) -> dict[str, object]:
        return {
            "host": self.name,
            "job": self.job,
            "state": self.state,
            "usual_cards": self.usual_cards,
            "free_cards": list(self.free_ids),
            "fits": {str(n): self.fits(n) for n in JOB_SIZES},
            "flags": list(self.flags),
            "cards": [c._asdict() for c in self.cards],
        }


@dataclass(frozen=True)
class Fleet:
    source: str
    hosts: tuple[Host, ...] = ()
    problems: tuple[str, ...] = ()
    """Banner lines: Prometheus unreachable, nothing exported, a metric absent, unreadable input."""
    absent: tuple[str, ...] = field(default=())
    """Metric names nothing reported."""

    def overview(self) -> Overview:
        return Overview(self.source, tuple(h.summary() for h in self.hosts), self.problems, self.absent)

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "problems": list(self.problems),
            "absent_metrics": list(self.absent),
            "hosts": [h.to_json() for h in self.hosts],
        }


ABSENT_MEANS = {
    m.UTILIZATION.name: "utilization shown as —",
    m.MEMORY_USED.name: "HBM use and free cards unknown",
    m.MEMORY_TOTAL.name: "HBM share unknown",
    m.POWER.name: "power shown as —",
    m.POWER_LIMIT.name: "power against the cap not checked",
    m.TEMP_ONCHIP.name: "temperature shown as —",
    m.TEMP_SLOWDOWN.name: f"hot cards judged against {DEFAULT_SLOWDOWN_C:g} °C",
    m.PENDING_ROWS.name: "ECC pending rows not checked",
}
"""What the screen loses when a metric is absent (the banner says it)."""


CARD_FLAGS = ("hot", "over cap", "ECC rows", "scale-out down")


def host_state(
    up_known: bool, up_value: float | None, cards: int, usual: int, counts: Mapping[str, int]
) -> tuple[HostState, int, tuple[str, ...]]:
    """A host's state, usual card count and flags (the health rules in the module docstring)."""
    usual_cards = max(usual, cards)
    state: HostState = "up"
    if up_known and up_value == 0:
        state = "down"
    elif up_known and (up_value is None or (not cards and usual_cards)):
        state = "stale"
    flags: list[str] = [] if state == "up" else [state]
    if state == "up" and cards < usual_cards:
        flags.append(f"{usual_cards - cards} missing")
    flags += [f"{flag} {counts[flag]}" for flag in CARD_FLAGS if counts.get(flag)]
    return state, usual_cards, tuple(flags)


def absent_notes(
    present: set[str], any_host: bool, problems: Iterable[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The fleet metrics nothing reported, and the banner lines with the note that says so."""
    absent = tuple(name for name in ABSENT_MEANS if name not in present) if any_host else ()
    notes = list(problems)
    if absent:
        notes.append("not reported: " + "; ".join(f"{n} ({ABSENT_MEANS[n]})" for n in absent))
    return absent, tuple(notes)


def summarize_hosts(
    source: str,
    up: Sequence[HostValue],
    usual: Sequence[HostValue],
    cards: Sequence[HostValue],
    flagged: Mapping[str, Sequence[CardValue]],
    mean_util: Sequence[HostValue],
    present: set[str],
    problems: Iterable[str] = (),
) -> Overview:
    """Every host's summary but its free cards (`WithFree` adds them), from per-host aggregates
    (`fetch.OVERVIEW_QUERIES`), by the same rules as `build.build_fleet`: `up`, `usual`, `cards`
    (each instance's cards) and `mean_util` are (instance, job, value); `flagged` (flag → cards)
    lists only the cards it names; `present` the fleet metrics reported. In two steps, so that a
    refresh where only the free cards changed makes only the second (`fetch.ScreenReader`). A host
    up with all its usual cards and no flag (most of a fleet: 2,048 summaries at 2,048 hosts) is
    made without `host_state`."""
    count = {instance: int(value) for instance, _, value in cards}
    job_of = {instance: job for instance, job, _ in cards}
    usual_count = {instance: int(value) for instance, _, value in usual}
    job_of.update({instance: job for instance, job, _ in usual})
    gaudi_jobs = set(job_of.values())
    up_of = {instance: value for instance, job, value in up if job in gaudi_jobs}
    job_of.update({instance: job for instance, job, value in up if value == 0})
    flagged_of = {flag: _ids_by_host(flagged.get(flag, ())) for flag in CARD_FLAGS}
    util_of = {instance: value for instance, _, value in mean_util}
    flag_counts: dict[str, dict[str, int]] = {}
    for flag, ids_of in flagged_of.items():
        for name, ids in ids_of.items():
            flag_counts.setdefault(name, {})[flag] = len(ids)
    hosts = []
    for name in sorted(count.keys() | usual_count.keys() | up_of.keys()):
        cards_now, usual_cards, up_value = count.get(name, 0), usual_count.get(name, 0), up_of.get(name)
        if up_value and cards_now and cards_now >= usual_cards and name not in flag_counts:
            fields: tuple[object, ...] = (name, job_of.get(name, ""), "up", cards_now, cards_now, (), ())
        else:
            state, usual_cards, flags = host_state(
                True, up_value, cards_now, usual_cards, flag_counts.get(name, {})
            )
            down = tuple(sorted(flagged_of["scale-out down"].get(name, ())))
            fields = (name, job_of.get(name, ""), state, cards_now, usual_cards, down, flags)
        hosts.append(_new(HostSummary, (*fields, util_of.get(name), ())))
    absent, notes = absent_notes(present, bool(hosts), problems)
    return Overview(source, tuple(hosts), notes, absent)


class FreeIds(dict[bytes, tuple[int, ...]]):
    """Card ids by the text of a host's free-cards number (a bit per card id, as Prometheus wrote
    it: `vector.keyed`), each text read once (a host of 8 cards has 256 of them)."""

    KEEP = 4096

    def __missing__(self, text: bytes) -> tuple[int, ...]:
        if len(self) >= self.KEEP:
            self.clear()  # an answer of ever new numbers (they are no sums of bits) stays bounded
        bits = vector.number(text)
        ids = self[text] = () if bits is None else card_ids(bits)
        return ids


class WithFree:
    """An overview from `summarize_hosts`, to which each refresh adds each host's free cards: its
    hosts' names as the `free` answer's bytes (none for a host that is not up: it has no free card)
    and their fields before `free_ids` (the last), taken once, so that adding them makes the 2,048
    summaries of 2,048 hosts in a few calls, with no Python step per host."""

    def __init__(self, overview: Overview) -> None:
        self.overview = overview
        self._keys = [host.name.encode() if host.state == "up" else b"" for host in overview.hosts]
        self._heads = [host[:-1] for host in overview.hosts]

    def __call__(self, free: Mapping[bytes, bytes], ids_of: FreeIds) -> Overview:
        """The overview with the free cards of `free` (instance → its number's text)."""
        ids = map(ids_of.__getitem__, map(free.get, self._keys, repeat(b"")))
        fields = map(operator.add, self._heads, zip(ids))
        return dataclasses.replace(self.overview, hosts=tuple(map(_new, repeat(HostSummary), fields)))


_new = tuple.__new__
"""A named tuple made straight from its fields (half the time of its constructor, 2,048 a refresh)."""


def card_ids(bits: float) -> tuple[int, ...]:
    """The card ids whose bit is set in `bits` (a sum of 2^id, `FREE_IDS` bits), in order; none for
    a value that is no such sum (negative, fractional, not finite, too large)."""
    if not (math.isfinite(bits) and 0 <= bits < 1 << FREE_IDS and bits.is_integer()):
        return ()
    whole = int(bits)
    return tuple(card for card in range(FREE_IDS) if whole >> card & 1)


def _ids_by_host(values: Iterable[CardValue]) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for instance, card, _ in values:
        if card.isdigit():
            found.setdefault(instance, set()).add(int(card))
    return found


Listed = TypeVar("Listed", Host, HostSummary)


def worst_first(hosts: Iterable[Listed]) -> list[Listed]:
    """Down, then stale, then flagged hosts, then the rest, by name within each."""
    rank = {"down": 0, "stale": 1, "up": 2}
    return sorted(hosts, key=lambda h: (rank[h.state], not h.flags, h.name))
