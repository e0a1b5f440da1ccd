"""Health rules, free cards and card-set fits of the fleet model."""

from __future__ import annotations

import math

from gaudi_tui.core.fleet import metrics as m
from gaudi_tui.core.fleet.build import build_fleet
from gaudi_tui.core.fleet.model import (
    DEFAULT_SLOWDOWN_C,
    FreeIds,
    WithFree,
    card_ids,
    summarize_hosts,
    worst_first,
)
from gaudi_tui.core.fleet.samples import Sample

GIB = 1024**3


def sample(metric: str, host: str, card: int, value: float, **labels: str) -> Sample:
    return Sample({"__name__": metric, "instance": host, "job": "gaudi", "id": str(card), **labels}, value)


def card_samples(
    host: str, card: int, *, used_gib: float = 0.5, temp: float = 40, power_w: float = 100, **extra: float
) -> dict[str, list[Sample]]:
    values = {
        m.UTILIZATION.name: 0.0,
        m.MEMORY_USED.name: used_gib * GIB,
        m.MEMORY_TOTAL.name: 96.0 * GIB,
        m.POWER.name: power_w * 1000,
        m.POWER_LIMIT.name: 600_000.0,
        m.TEMP_ONCHIP.name: temp,
        **extra,
    }
    return {name: [sample(name, host, card, value)] for name, value in values.items()}


def merged(*parts: dict[str, list[Sample]]) -> dict[str, list[Sample]]:
    out: dict[str, list[Sample]] = {}
    for part in parts:
        for name, samples in part.items():
            out.setdefault(name, []).extend(samples)
    return out


def up(host: str, value: float) -> Sample:
    return Sample({"__name__": "up", "instance": host, "job": "gaudi"}, value)


def usual(host: str, count: int) -> Sample:
    return Sample({"instance": host, "job": "gaudi"}, float(count))


def test_card_flags_hot_over_cap_and_ecc_rows() -> None:
    samples = merged(
        card_samples("a", 0, temp=DEFAULT_SLOWDOWN_C),  # at the default threshold: hot
        card_samples("a", 1, temp=80, **{m.TEMP_SLOWDOWN.name: 75.0}),  # past its own threshold
        card_samples("a", 2, temp=89),  # below the default: fine
        card_samples("a", 3, power_w=601),
        card_samples("a", 4, **{m.PENDING_ROWS.name: 1.0}),
    )
    host = build_fleet("p", samples, [up("a", 1)], [usual("a", 5)]).hosts[0]
    assert [c.flags for c in host.cards] == [("hot",), ("hot",), (), ("over cap",), ("ECC rows",)]
    assert host.flags == ("hot 2", "over cap 1", "ECC rows 1")


def test_host_states_down_stale_missing() -> None:
    samples = merged(
        *(card_samples("ok", i) for i in range(8)), *(card_samples("short", i) for i in range(6))
    )
    fleet = build_fleet(
        "p",
        samples,
        [
            up("ok", 1),
            up("short", 1),
            up("dead", 0),
            up("empty", 1),
            Sample({"instance": "other", "job": "node"}, 0),
        ],
        [usual("ok", 8), usual("short", 8), usual("empty", 8), usual("gone", 8)],
    )
    hosts = {h.name: h for h in fleet.hosts}
    assert set(hosts) == {"ok", "short", "dead", "empty", "gone"}  # `other` is no Gaudi job's target
    assert (hosts["ok"].state, hosts["ok"].flags) == ("up", ())
    assert (hosts["short"].state, hosts["short"].flags) == ("up", ("2 missing",))
    assert (hosts["dead"].state, hosts["dead"].flags) == ("down", ("down",))
    assert hosts["empty"].state == "stale"  # answers, sends no card
    assert hosts["gone"].state == "stale"  # left `up`: no longer scraped
    assert [h.name for h in worst_first(fleet.hosts)] == ["dead", "empty", "gone", "short", "ok"]


def test_other_jobs_are_left_out() -> None:
    samples = card_samples("a", 0)
    other = Sample({"__name__": "up", "instance": "node-exporter:9100", "job": "node"}, 1)
    fleet = build_fleet("p", samples, [up("a", 1), other], [usual("a", 1)])
    assert [h.name for h in fleet.hosts] == ["a"]


def test_free_cards_and_intel_card_sets() -> None:
    busy = {1, 5}
    samples = merged(*(card_samples("a", i, used_gib=90 if i in busy else 0.75) for i in range(8)))
    host = build_fleet("p", samples, [up("a", 1)], [usual("a", 8)]).hosts[0]
    assert host.free_ids == (0, 2, 3, 4, 6, 7)
    # {2,3} and {6,7} are free pairs; no 4-card set ({0..3}, {4..7}) is wholly free.
    assert [host.fits(n) for n in (1, 2, 4, 8)] == [True, True, False, False]


def test_a_down_host_has_no_free_card() -> None:
    samples = merged(*(card_samples("a", i) for i in range(8)))
    host = build_fleet("p", samples, [up("a", 0)], [usual("a", 8)]).hosts[0]
    assert host.state == "down" and host.free_ids == () and not host.fits(1)


def test_absent_metrics_are_named() -> None:
    samples = card_samples("a", 0)
    del samples[m.POWER_LIMIT.name]
    fleet = build_fleet("p", samples, [up("a", 1)], [usual("a", 1)])
    assert fleet.absent == (m.POWER_LIMIT.name, m.TEMP_SLOWDOWN.name, m.PENDING_ROWS.name)
    assert "power against the cap not checked" in fleet.problems[0]
    assert fleet.hosts[0].cards[0].ratio("power") is None


def test_colour_ratios() -> None:
    card = (
        build_fleet("p", card_samples("a", 0, used_gib=48, temp=45, power_w=300), [up("a", 1)])
        .hosts[0]
        .cards[0]
    )
    assert card.ratio("hbm") == 0.5 and card.ratio("power") == 0.5
    assert card.ratio("temperature") == 45 / DEFAULT_SLOWDOWN_C and card.ratio("utilization") == 0


def nic(host: str, card: int, port: int, kind: str, value: float) -> Sample:
    return sample(m.NIC_PORT_STATUS.name, host, card, value, port=str(port), port_type=kind)


def test_a_scale_out_port_down_flags_the_host_and_leaves_multi_host_sizes() -> None:
    """Card 3 of host a loses external port 8 (Intel's meaning: 0 = down): the host is flagged, the
    card is out of the 16-card (multi-host) size, single-host sizes still fit; an internal port down
    or an external one up changes nothing."""
    cards = [card_samples(host, i) for host in ("a:1", "b:1") for i in range(8)]
    ports = [
        nic("a:1", 3, 8, "external", 0),
        nic("a:1", 3, 22, "external", 1),
        nic("a:1", 5, 2, "internal", 0),
        nic("b:1", 3, 8, "external", 1),
    ]
    fleet = build_fleet("t", merged(*cards, {m.NIC_PORT_STATUS.name: ports}))
    a, b = fleet.hosts
    assert a.cards[3].ports_down == (8,) and a.cards[3].flags == ("scale-out down",)
    assert a.cards[5].ports_down == () and a.flags == ("scale-out down 1",)
    assert a.down_ports() == ["card 3: port 8"]
    assert [a.fits(n) for n in (1, 2, 4, 8, 16)] == [True, True, True, True, False]
    assert b.flags == () and b.fits(16) and b.to_json()["fits"]["16"] is True
    assert worst_first(fleet.hosts)[0] is a


def test_a_host_whose_usual_count_is_not_a_number_does_not_stop_the_fleet() -> None:
    """Issue 38, A.4: Prometheus answers NaN or ±Inf for a value; one host's `usual` count of
    NaN raised in int() and no host was shown."""
    samples = merged(card_samples("a", 0), card_samples("b", 0), card_samples("c", 0))
    usual_counts = [Sample({"instance": "a", "job": "gaudi"}, float("nan")), usual("b", 1),
                    Sample({"instance": "c", "job": "gaudi"}, float("inf"))]  # fmt: skip
    fleet = build_fleet("p", samples, [up("a", 1), up("b", 1), up("c", 1)], usual_counts)
    assert [(h.name, len(h.cards)) for h in fleet.hosts] == [("a", 1), ("b", 1), ("c", 1)]


def test_free_cards_are_read_back_from_their_bits_for_the_hosts_that_are_up() -> None:
    """The screen's free cards come as one number per host (the sum of 2^id of each free card), as
    the answer's text: read back in order; a value that is no such sum or no number (what a hostile
    or broken server could send) gives none, a host missing from the answer none, and a host that
    is not up has none, as `Host.free_ids` says; every other field is the summary's."""
    assert card_ids(float(0b1011)) == (0, 1, 3) and card_ids(0.0) == ()
    assert card_ids(float(2**31)) == (31,)
    for bad in (math.nan, math.inf, -1.0, 1.5, float(2**32)):
        assert card_ids(bad) == ()
    names = ("a:1", "b:1", "c:1", "d:1", "e:1", "f:1", "g:1")
    up = [(name, "gaudi", 0.0 if name == "b:1" else 1.0) for name in names]
    cards = [(name, "gaudi", 8.0) for name in names]
    base = summarize_hosts("src", up, [], cards, {}, [("a:1", "gaudi", 55.0)], set())
    free = {b"a:1": b"6", b"b:1": b"3", b"c:1": b"NaN", b"d:1": b"1e+00", b"e:1": b"-4", b"f:1": b"+-"}
    ids_of = FreeIds()
    overview = WithFree(base)(free, ids_of)
    assert [(h.name, h.state, h.free_ids) for h in overview.hosts] == [
        ("a:1", "up", (1, 2)),
        ("b:1", "down", ()),
        ("c:1", "up", ()),
        ("d:1", "up", (0,)),
        ("e:1", "up", ()),
        ("f:1", "up", ()),
        ("g:1", "up", ()),
    ]
    assert [h._replace(free_ids=()) for h in overview.hosts] == list(base.hosts)
    assert overview.hosts[0].mean_util == 55.0 and overview.source == "src"
    bounded = FreeIds()
    bounded.KEEP = 3  # ever new texts (no sums of bits) keep it bounded
    for bits in range(10):
        assert bounded[b"%d" % bits] == card_ids(float(bits)) and len(bounded) <= 3
