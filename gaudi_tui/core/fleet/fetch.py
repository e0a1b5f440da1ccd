"""One fleet refresh from Prometheus, or a fleet from a saved /metrics text.

A refresh asks exactly one instant query per metric for the whole fleet (never one per host), all
at once on a few threads: `up`, the usual card count per instance over the last hour, each of
`metrics.FLEET_METRICS`, and the scale-out NIC ports that are down. A host's 5-minute history is one range query for all its metrics.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gaudi_tui.core.fleet import metrics as m
from gaudi_tui.core.fleet.exposition import parse_exposition
from gaudi_tui.core.fleet.model import Fleet, build_fleet
from gaudi_tui.core.fleet.prometheus import PrometheusClient, PrometheusError, Series
from gaudi_tui.core.fleet.samples import CardValue, Sample

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
    `model.FIELD_OF`; its query is made here."""
    queries = {"up": UP_QUERY, "usual": USUAL_QUERY, m.NIC_PORT_STATUS.name: NIC_DOWN_QUERY}
    for info in m.FLEET_METRICS:
        keep = IDENTITY if info is m.MEMORY_USED else "instance, id"
        queries[info.name] = f"max by ({keep}) ({info.name})"
    return queries


LABELLED = ("up", "usual", m.MEMORY_USED.name, m.NIC_PORT_STATUS.name)
"""The answers read as labelled samples (the down scale-out ports keep `port` and `port_type`); the rest are `… by (instance, id)` card values."""


def refresh(client: PrometheusClient, at: float | None = None) -> Fleet:
    """The fleet now (or at unix time `at`). Never raises: an unreachable or failing Prometheus
    becomes a problem line."""
    queries = fleet_queries()
    answers: dict[str, list[Sample]] = {}
    values: dict[str, list[CardValue]] = {}
    failures: list[str] = []

    def ask(key: str, promql: str) -> None:
        try:
            if key in LABELLED:
                answers[key] = client.query(promql, at)
            else:
                values[key] = client.card_values(promql, at)
        except PrometheusError as error:
            if str(error) not in failures:
                failures.append(str(error))

    with ThreadPoolExecutor(max_workers=len(queries)) as pool:
        list(pool.map(ask, queries.keys(), queries.values()))
    if "up" not in answers:
        return Fleet(client.url, problems=tuple(failures))
    samples = {name: answers[name] for name in (m.MEMORY_USED.name,) if name in answers}
    samples[m.NIC_PORT_STATUS.name] = answers.get(m.NIC_PORT_STATUS.name, [])
    fleet = build_fleet(
        client.url, samples, answers["up"], answers.get("usual", []), problems=failures, card_values=values
    )
    if not fleet.hosts:
        empty = (
            f"Prometheus at {client.url} has no {m.DEVICE_CONFIG.name} series and no target of a job "
            "that has: is an exporter (Intel's or `gaudi-tui exporter`) scraped?"
        )
        return Fleet(client.url, problems=(*fleet.problems, empty))
    return fleet


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
