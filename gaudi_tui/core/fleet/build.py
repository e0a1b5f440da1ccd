"""A `Fleet` (every host with each card) from per-card Intel-exporter samples: a Prometheus
answer or a saved /metrics, by the health rules of `model` (its docstring)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gaudi_tui.core.fleet import metrics as m
from gaudi_tui.core.fleet.model import (
    CARD_FLAGS,
    DEFAULT_SLOWDOWN_C,
    Card,
    Fleet,
    Host,
    absent_notes,
    host_state,
)
from gaudi_tui.core.fleet.samples import CardValue, Sample, SamplesByMetric

FIELD_OF = {
    m.MEMORY_USED.name: "memory_used_bytes",  # first: its query keeps the card's identity labels
    m.UTILIZATION.name: "utilization_pct",
    m.MEMORY_TOTAL.name: "memory_total_bytes",
    m.POWER.name: "power_mw",
    m.POWER_LIMIT.name: "power_limit_mw",
    m.TEMP_ONCHIP.name: "temperature_c",
    m.TEMP_SLOWDOWN.name: "slowdown_c",
    m.PENDING_ROWS.name: "ecc_pending",
}
_AT = {name: Card._fields.index(field) for name, field in FIELD_OF.items()}
"""Each metric's place in a card's fields: a card is read into a list of its fields, then made
straight from it (the rows on screen are 320 cards a refresh, `gaudi-tui fleet` 4,096 at 512 hosts)."""
ID, SERIAL, USED, POWER, LIMIT, TEMP, SLOWDOWN, ECC, PORTS, FLAGS = map(
    Card._fields.index,
    (
        "id",
        "serial",
        "memory_used_bytes",
        "power_mw",
        "power_limit_mw",
        "temperature_c",
        "slowdown_c",
        "ecc_pending",
        "ports_down",
        "flags",
    ),
)
IDENTITY = slice(SERIAL, SERIAL + 3)
"""Serial, UUID and pod: `Card`'s fields after its id."""
_DEFAULTS = list(Card(0))
Slots = list[Any]
"""A card's fields in `Card`'s order, while its values are read."""
_new = tuple.__new__


def _card_flags(card: Slots) -> tuple[str, ...]:
    flags = []
    temperature, power, limit = card[TEMP], card[POWER], card[LIMIT]
    if temperature is not None and temperature >= (card[SLOWDOWN] or DEFAULT_SLOWDOWN_C):
        flags.append("hot")
    if power is not None and limit and power > limit:
        flags.append("over cap")
    if card[ECC]:
        flags.append("ECC rows")
    if card[PORTS]:
        flags.append("scale-out down")
    return tuple(flags)


def _card(card: Slots) -> Card:
    card[FLAGS] = _card_flags(card)
    return _new(Card, card)


def _identity(labels: Mapping[str, str]) -> tuple[str, str, str]:
    """A card's serial, UUID and pod (`namespace/name`, or the one of them it has) from its labels."""
    namespace, pod = labels.get("pod_namespace"), labels.get("pod_name")
    serial = labels.get("Serial") or labels.get("device", "")
    return (
        serial,
        labels.get("UUID", ""),
        f"{namespace}/{pod}" if namespace and pod else namespace or pod or "",
    )


def _cards_by_host(
    samples: SamplesByMetric,
    default_host: str,
    job_of: dict[str, str],
    card_values: Mapping[str, Sequence[CardValue]],
) -> dict[str, dict[int, Slots]]:
    """host → card id → the card's fields (and each host's `job` into `job_of`). The hot path: a
    refresh of 4,096 cards reads ~30,000 values, so the card key stays the raw label pair, and most
    metrics come as bare (instance, id, value) triples (`card_values`), not labelled samples."""
    by_key: dict[tuple[str, str | None], Slots] = {}
    by_host: dict[str, dict[int, Slots]] = {}
    for name, at in _AT.items():
        as_flag = at == ECC
        for labels, value in samples.get(name, ()):
            key = (labels.get("instance") or default_host, labels.get("id"))
            card = by_key.get(key)
            if card is None:
                card = by_key[key] = _new_card(key, labels, by_host)
                if "job" in labels:
                    job_of[key[0]] = labels["job"]
            if "Serial" in labels and not card[SERIAL]:
                card[IDENTITY] = _identity(labels)
            card[at] = value >= 1 if as_flag else value
        values = card_values.get(name, ())
        if as_flag:
            values = [(instance, card_id, value >= 1) for instance, card_id, value in values]
        get = by_key.get
        for instance, card_id, value in values:
            card = get((instance, card_id))
            if card is None:
                card = by_key[instance, card_id] = _new_card((instance, card_id), {}, by_host)
            card[at] = value
    _add_ports_down(samples.get(m.NIC_PORT_STATUS.name, ()), default_host, by_host)
    return by_host


def _add_ports_down(
    samples: Iterable[Sample], default_host: str, by_host: dict[str, dict[int, Slots]]
) -> None:
    """Each known card's external ports whose `habanalabs_nic_port_status` is 0, into `ports_down`."""
    for labels, value in samples:
        if value >= 1 or labels.get("port_type") != "external":
            continue
        try:
            card_id, port = int(labels.get("id", "")), int(labels.get("port", ""))
        except ValueError:
            continue
        card = by_host.get(labels.get("instance") or default_host, {}).get(card_id)
        if card is not None:
            card[PORTS] = tuple(sorted({*card[PORTS], port}))


def _new_card(
    key: tuple[str, str | None], labels: Mapping[str, str], by_host: dict[str, dict[int, Slots]]
) -> Slots:
    """A card's fields, in `by_host` under its host and id; for a key with no usable `id` label,
    fields in no host (what is read into them is dropped)."""
    card = _DEFAULTS.copy()
    try:
        card_id = int(key[1] or "")
    except ValueError:
        return card
    card[ID] = card_id
    card[IDENTITY] = _identity(labels)
    by_host.setdefault(key[0], {})[card_id] = card
    return card


def _count(value: float) -> int:
    """A count from Prometheus (a float), 0 where it is none: NaN or infinite for one host raised in
    int() and left the whole Fleet unread."""
    return int(value) if math.isfinite(value) and 0 <= value < 1 << 31 else 0


def build_fleet(
    source: str,
    samples: SamplesByMetric,
    up: Sequence[Sample] | None = None,
    usual: Sequence[Sample] | None = None,
    default_host: str = "localhost",
    problems: Iterable[str] = (),
    card_values: Mapping[str, Sequence[CardValue]] | None = None,
) -> Fleet:
    """The fleet these samples describe. `up` (Prometheus's `up`) and `usual` (cards per instance
    over the last hour) are None when reading a saved /metrics text: every host there is up.
    `card_values`: metric → (instance, id, value), beside or instead of that metric's samples."""
    job_of: dict[str, str] = {}
    card_values = card_values or {}
    by_host = _cards_by_host(samples, default_host, job_of, card_values)
    usual_count = {s.labels.get("instance", ""): _count(s.value) for s in usual or ()}
    job_of.update({s.labels.get("instance", ""): s.labels.get("job", "") for s in usual or ()})
    gaudi_jobs = set(job_of.values())
    up_of = {s.labels.get("instance", ""): s.value for s in up or () if s.labels.get("job", "") in gaudi_jobs}
    job_of.update({s.labels.get("instance", ""): s.labels.get("job", "") for s in up or () if s.value == 0})
    names = set(by_host) | set(usual_count) | set(up_of)
    hosts = []
    for name in names:
        slots = by_host.get(name, {})
        cards = tuple(_card(slots[card_id]) for card_id in sorted(slots))
        flagged = [c.flags for c in cards if c.flags]
        counts = {flag: sum(flag in f for f in flagged) for flag in CARD_FLAGS} if flagged else {}
        state, usual_cards, flags = host_state(
            up is not None, up_of.get(name), len(cards), usual_count.get(name, 0), counts
        )
        hosts.append(Host(name, job_of.get(name, ""), state, usual_cards, cards, flags))
    present = {name for name in FIELD_OF if samples.get(name) or card_values.get(name)}
    absent, notes = absent_notes(present, bool(hosts), problems)
    return Fleet(source, tuple(sorted(hosts, key=lambda h: h.name)), notes, absent)
