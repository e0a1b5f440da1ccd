"""One fleet refresh from Prometheus, or a fleet from a saved /metrics text.

A refresh (`refresh`, what `gaudi-tui fleet` prints) asks exactly one instant query per metric for
the whole fleet (never one per host), all at once on threads kept between refreshes, over the
client's kept-alive connections: `up`, the usual card count per
instance over the last hour, each of `metrics.FLEET_METRICS`, and the scale-out NIC ports that are
down. The Fleet screen asks less (`ScreenReader`): per-host aggregates that Prometheus computes for
every host (`OVERVIEW_QUERIES`: a few hundred values at 512 hosts, not 30,000), and the per-card
queries only for the hosts on screen. A host's 5-minute history is one range query for all its
metrics.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from gaudi_tui.core.devices.usage import BUSY_MIB
from gaudi_tui.core.fleet import metrics as m
from gaudi_tui.core.fleet.build import build_fleet
from gaudi_tui.core.fleet.exposition import parse_exposition
from gaudi_tui.core.fleet.model import (
    DEFAULT_SLOWDOWN_C,
    FREE_IDS,
    Fleet,
    FreeIds,
    Host,
    Overview,
    WithFree,
    summarize_hosts,
)
from gaudi_tui.core.fleet.prometheus import AT_ONCE, PrometheusClient, PrometheusError, Series
from gaudi_tui.core.fleet.samples import NAME, CardValue, HostValue, Sample

UP_QUERY = "up"
USUAL_QUERY = (
    f"count by (instance, job) (count by (instance, job, id) "
    f'(max_over_time({m.DEVICE_CONFIG.name}{{UUID!="na"}}[1h])))'
)
"""Cards per instance in the last hour: distinct card ids, so a pod's labels on a card or the
exporter's first snapshot (UUID="na", before it read the cards) never count as more cards."""
HISTORY_S = 300
HISTORY_STEP_S = 10


IDENTITY = "instance, job, id, Serial, UUID, pod_namespace, pod_name"
"""Labels kept for the card's identity (on one metric only: HBM used); the other metrics keep just
`instance` and `id`, and their answers are read as bare (instance, id, value) triples
(`PrometheusClient.card_values`): what bounds a refresh's cost is the size of the answers."""


NIC_DOWN_QUERY = (
    f'min by (instance, id, port, port_type) ({m.NIC_PORT_STATUS.name}{{port_type="external"}}) < 1'
)
"""Only the scale-out ports that are down: a handful of series, not 3 per card of the fleet."""


def fleet_queries() -> dict[str, str]:
    """Every query of one refresh: key → PromQL (`max by` only drops labels: one series per card).
    A new per-card metric is one more entry in `metrics.FLEET_METRICS` and a field in
    `build.FIELD_OF`; its query is made here."""
    return {"up": UP_QUERY, "usual": USUAL_QUERY, m.NIC_PORT_STATUS.name: NIC_DOWN_QUERY, **card_queries()}


def card_queries(instances: Iterable[str] | None = None) -> dict[str, str]:
    """The per-card query of each of `metrics.FLEET_METRICS`, for every host or only `instances`."""
    where = "" if instances is None else f'{{instance=~"{_quoted("|".join(map(re.escape, instances)))}"}}'
    queries = {}
    for info in m.FLEET_METRICS:
        keep = IDENTITY if info is m.MEMORY_USED else "instance, id"
        queries[info.name] = f"max by ({keep}) ({info.name}{where})"
    return queries


def _card(info: m.MetricInfo) -> str:
    return f"max by (instance, id) ({info.name})"


_NAMES = "|".join(info.name for info in m.FLEET_METRICS)
_ID_BITS = " or ".join(f'label_replace(vector({1 << k}), "id", "{k}", "", "")' for k in range(FREE_IDS))
"""2^id for each card id a host's free cards can have: their sum is the host's free cards as one
number (`model.card_ids` reads it back)."""
OVERVIEW_QUERIES = {
    "up": "max by (instance, job) (up)",
    "usual": USUAL_QUERY,
    "cards": f"count by (instance, job) (max by (instance, job, id) ({m.MEMORY_USED.name}))",
    "free": (
        f"sum by (instance, job) ((max by (instance, job, id) "
        f'({m.MEMORY_USED.name}{{pod_namespace="", pod_name=""}}) <= {BUSY_MIB * m.MIB}) * 0 '
        f"+ on (id) group_left () ({_ID_BITS}))"
    ),
    "hot": (
        f"{_card(m.TEMP_ONCHIP)} >= ({_card(m.TEMP_SLOWDOWN)} > 0 or {_card(m.TEMP_ONCHIP)} * 0 + "
        f"{DEFAULT_SLOWDOWN_C:g})"
    ),
    "over cap": f"{_card(m.POWER)} > ({_card(m.POWER_LIMIT)} > 0)",
    "ECC rows": f"{_card(m.PENDING_ROWS)} >= 1",
    m.NIC_PORT_STATUS.name: NIC_DOWN_QUERY,
}
"""What the Fleet screen asks for every host each refresh: `up`, the usual and present card counts
per instance (a card counts by its HBM-used series: Intel's exporter and ours send one per card;
`gaudi-tui fleet` counts a card seen in any metric), and only the cards that are free or flagged (by
the rules of `model`) and the scale-out ports down. The free cards come as one number per host (a bit
per card id, `_ID_BITS`), not one series per free card: 2,048 values at 2,048 hosts, not up to
16,384, and an answer that stays the same while no card is taken or freed, whatever the HBM use
(the client's last reading of it serves again). Each selects a metric's series once (what costs
Prometheus), except the temperature, twice for `hot` (once while no threshold is reported)."""
HOT_DEFAULT_QUERY = f"{_card(m.TEMP_ONCHIP)} >= {DEFAULT_SLOWDOWN_C:g}"
"""`hot` while no card reports a slowdown threshold (`gaudi-tui exporter` gives none): the
temperature selected once."""
MEAN_UTIL_QUERY = f"avg by (instance, job) (max by (instance, job, id) ({m.UTILIZATION.name}))"
"""Asked only while the screen sorts by it (busiest first)."""
OVERVIEW_LABELLED = (m.NIC_PORT_STATUS.name, m.MEMORY_USED.name)
BY_HOST = ("up", "usual", "cards", "mean_util")
"""The answers read as (instance, job, value); `free` is read as instance → its number's text
(`PrometheusClient.keyed_values`), the other overview answers as card values."""
PRESENT_MATCH = f'{{__name__=~"{_NAMES}"}}'
PRESENT_WINDOW_S = 300
"""The fleet metrics with a series in the last 5 minutes: the label-values API, an index lookup."""


LABELLED = ("up", "usual", m.MEMORY_USED.name, m.NIC_PORT_STATUS.name)
"""The answers read as labelled samples (the down scale-out ports keep `port` and `port_type`); the rest are `… by (instance, id)` card values."""


_POOL = ThreadPoolExecutor(max_workers=AT_ONCE, thread_name_prefix="prometheus-query")
"""The threads of `ask`, started by the first refreshes and kept (idle between refreshes): a refresh
starts no thread and, with the client's kept-alive connections, opens no connection."""


class Answers(NamedTuple):
    """What `ask` got: the answers read as samples, as (instance, id|job, value) triples, as
    `keyed_values` (instance's bytes → value's text), and the distinct failures."""

    samples: dict[str, list[Sample]]
    values: dict[str, list[CardValue]]
    failures: list[str]
    keyed: dict[str, Mapping[bytes, bytes]]


def ask(
    client: PrometheusClient,
    queries: dict[str, str],
    labelled: Iterable[str],
    at: float | None,
    present: bool = False,
    by_host: Iterable[str] = (),
    keyed: Iterable[str] = (),
) -> Answers:
    """Every query at once on the kept threads (`AT_ONCE` at a time; each call bounded by the client's
    timeout): the `labelled` keys as
    samples, the `by_host` keys as (instance, job, value), the `keyed` ones as instance → value (bytes
    of the answer), the rest as (instance, id, value) card values, and the distinct failures. `present`: also which fleet metrics have series (as `present`
    samples named so)."""
    answers: dict[str, list[Sample]] = {}
    values: dict[str, list[CardValue]] = {}
    failures: list[str] = []
    by_instance: dict[str, Mapping[bytes, bytes]] = {}
    as_samples, host_keys, keyed_keys = set(labelled), set(by_host), set(keyed)

    def one(key: str, promql: str) -> None:
        try:
            if key == "present":
                end = time.time() if at is None else at
                names = client.label_values("__name__", promql, end - PRESENT_WINDOW_S, end)
                answers[key] = [Sample({NAME: name}, 1.0) for name in names]
            elif key in as_samples:
                answers[key] = client.query(promql, at)
            elif key in host_keys:
                values[key] = client.pair_values(promql, "instance", "job", at)
            elif key in keyed_keys:
                by_instance[key] = client.keyed_values(promql, "instance", "job", at)
            else:
                values[key] = client.card_values(promql, at)
        except PrometheusError as error:
            if str(error) not in failures:
                failures.append(str(error))

    if present:
        queries = {**queries, "present": PRESENT_MATCH}
    list(_POOL.map(one, queries.keys(), queries.values()))
    return Answers(answers, values, failures, by_instance)


def refresh(client: PrometheusClient, at: float | None = None) -> Fleet:
    """The fleet now (or at unix time `at`). Never raises: an unreachable or failing Prometheus
    becomes a problem line."""
    answers, values, failures, _ = ask(client, fleet_queries(), LABELLED, at)
    if "up" not in answers:
        return Fleet(client.url, problems=tuple(failures))
    samples = {name: answers[name] for name in (m.MEMORY_USED.name,) if name in answers}
    samples[m.NIC_PORT_STATUS.name] = answers.get(m.NIC_PORT_STATUS.name, [])
    fleet = build_fleet(
        client.url, samples, answers["up"], answers.get("usual", []), problems=failures, card_values=values
    )
    if not fleet.hosts:
        return Fleet(client.url, problems=(*fleet.problems, _nothing_exported(client.url)))
    return fleet


def _nothing_exported(url: str) -> str:
    return (
        f"Prometheus at {url} has no {m.DEVICE_CONFIG.name} series and no target of a job "
        "that has: is an exporter (Intel's or `gaudi-tui exporter`) scraped?"
    )


class ScreenReader:
    """What the Fleet screen asks each refresh: `OVERVIEW_QUERIES` for every host, and the per-card
    queries only for the hosts on screen (`card_queries(visible)`), all at once. Cards for hosts
    scrolled into view come from `cards`, judged with the last refresh's `up`, usual counts and
    down ports. Never raises: failures become problem lines. `at`: read the fleet at this unix time
    (a backfilled TSDB, the bench), else now."""

    def __init__(self, client: PrometheusClient, at: float | None = None) -> None:
        self.client = client
        self.at = at
        self._answers: dict[str, list[Sample]] = {}
        self._by_host: dict[str, list[HostValue]] = {}
        self._host_index: dict[str, tuple[list[HostValue], dict[str, list[HostValue]]]] = {}
        self.present: set[str] | None = None
        """The fleet metrics with series, from the last refresh (None: not known)."""
        self._base: tuple[tuple[object, ...], WithFree] | None = None
        """The last answers given to `model.summarize_hosts` and its overview."""
        self._free_ids = FreeIds()
        self._built: tuple[tuple[object, ...], dict[str, Host]] | None = None
        """The last answers given to `build_fleet` for the rows' cards, and their hosts (a 15 s
        scrape read every 5 s: two refreshes in three get the same answers)."""
        self._shown: tuple[WithFree, Mapping[bytes, bytes], Overview] | None = None
        """That overview, the last free cards, and the overview with them (`model.WithFree`): a
        refresh where only the free cards changed makes only this one, one where nothing changed
        neither."""

    def queries(self, visible: Sequence[str], mean_util: bool = False) -> dict[str, str]:
        """The PromQL of one refresh: key → query (per-card keys are the metric names); besides, one
        label-values lookup of the metrics present (`ask(present=True)`), which the next refresh
        uses: no threshold reported, `hot` compares with the default alone."""
        queries = {**OVERVIEW_QUERIES}
        if self.present is not None and m.TEMP_SLOWDOWN.name not in self.present:
            queries["hot"] = HOT_DEFAULT_QUERY
        if mean_util:
            queries["mean_util"] = MEAN_UTIL_QUERY
        return {**queries, **(card_queries(visible) if visible else {})}

    def refresh(self, visible: Sequence[str], mean_util: bool = False) -> tuple[Overview, dict[str, Host]]:
        """Every host's summary (with its mean utilization when `mean_util`) and the cards of
        `visible` (host → Host with its cards)."""
        queries = self.queries(visible, mean_util)
        answers, values, failures, keyed = ask(
            self.client, queries, OVERVIEW_LABELLED, self.at, present=True, by_host=BY_HOST, keyed=("free",)
        )
        if "up" not in values:
            return Overview(self.client.url, problems=tuple(failures)), {}
        self._answers = answers
        self._by_host = {key: values.get(key, []) for key in ("up", "usual")}
        flagged = {key: values.get(key, []) for key in ("hot", "over cap", "ECC rows")}
        flagged["scale-out down"] = [
            (s.labels.get("instance", ""), s.labels.get("id", ""), s.value)
            for s in answers.get(m.NIC_PORT_STATUS.name, [])
        ]
        present = {s.labels.get("__name__", "") for s in answers.get("present", [])}
        self.present = present if "present" in answers else None
        given = (
            values["up"],
            values.get("usual", []),
            values.get("cards", []),
            flagged,
            values.get("mean_util", []),
            present,
            failures,
        )
        if self._base is None or self._base[0] != given:
            self._base = (given, WithFree(summarize_hosts(self.client.url, *given)))
        base, free = self._base[1], keyed.get("free", {})
        if self._shown is None or self._shown[0] is not base or self._shown[1] != free:
            self._shown = (base, free, base(free, self._free_ids))
        overview = self._shown[2]  # the same answers: the same summaries, not built again
        if not overview.hosts:
            overview = Overview(
                self.client.url, problems=(*overview.problems, _nothing_exported(self.client.url))
            )
        return overview, self._hosts(visible, answers, values)

    def cards(self, names: Sequence[str]) -> tuple[dict[str, Host], list[str]]:
        """The cards of `names` (hosts scrolled into view) and the failures."""
        answers, values, failures, _ = ask(self.client, card_queries(names), (m.MEMORY_USED.name,), self.at)
        return self._hosts(names, {**self._answers, **answers}, values), failures

    def _of_host(self, key: str) -> dict[str, list[HostValue]]:
        """The last `up` or `usual` answer by instance, made again only when the answer changed (the
        rows on screen look up their 40 hosts, not 2,048)."""
        found = self._by_host.get(key, [])
        kept = self._host_index.get(key)
        if kept is None or kept[0] != found:
            index: dict[str, list[HostValue]] = {}
            for value in found:
                index.setdefault(value[0], []).append(value)
            kept = self._host_index[key] = (found, index)
        return kept[1]

    def _hosts(
        self, names: Sequence[str], answers: dict[str, list[Sample]], values: dict[str, list[CardValue]]
    ) -> dict[str, Host]:
        if not names:
            return {}
        wanted = dict.fromkeys(names)

        def mine(samples: Iterable[Sample]) -> list[Sample]:
            return [s for s in samples if s.labels.get("instance") in wanted]

        def hosts(key: str) -> list[Sample]:
            of = self._of_host(key)
            return [Sample({"instance": i, "job": j}, v) for name in wanted for i, j, v in of.get(name, ())]

        samples = {
            m.MEMORY_USED.name: mine(answers.get(m.MEMORY_USED.name, [])),
            m.NIC_PORT_STATUS.name: mine(answers.get(m.NIC_PORT_STATUS.name, [])),
        }
        cards = {key: values[key] for key in FIELD_KEYS if key in values}
        given = (samples, hosts("up"), hosts("usual"), cards)
        if self._built is None or self._built[0] != given:
            fleet = build_fleet(self.client.url, *given[:3], card_values=cards)
            self._built = (given, {host.name: host for host in fleet.hosts})
        return dict(self._built[1])  # a copy: the screen adds the cards of rows scrolled into view


FIELD_KEYS = tuple(info.name for info in m.FLEET_METRICS)


def from_text(text: str, source: str, default_host: str) -> Fleet:
    """The fleet a saved /metrics text describes (hosts from `instance`, else `default_host`). A
    Prometheus /federate dump carries `up` too: then a target that was down shows as down."""
    exposition = parse_exposition(text)
    problem = exposition.problem()
    up = exposition.samples.get(UP_QUERY)
    fleet = build_fleet(
        source, exposition.samples, up, default_host=default_host, problems=[problem] if problem else []
    )
    if not fleet.hosts:
        return Fleet(source, problems=(*fleet.problems, f"no habanalabs_* card series in {source}"))
    return fleet


def from_file(path: str) -> Fleet:
    """`from_text` of a file; a file that cannot be read becomes a problem line."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        return Fleet(path, problems=(f"cannot read {path}: {error.strerror}",))
    return from_text(text, path, Path(path).stem)


def history(
    client: PrometheusClient, instance: str, now: float | None = None
) -> dict[tuple[str, int], Series]:
    """The last five minutes of every fleet metric of one host: (metric, card id) → series."""
    end = time.time() if now is None else now
    names = "|".join(info.name for info in m.FLEET_METRICS)
    promql = f'{{__name__=~"{names}",instance="{_quoted(instance)}"}}'
    found: dict[tuple[str, int], Series] = {}
    for series in client.query_range(promql, end - HISTORY_S, end, HISTORY_STEP_S):
        try:
            found[(series.labels.get("__name__", ""), int(series.labels.get("id", "")))] = series
        except ValueError:
            continue
    return found


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
