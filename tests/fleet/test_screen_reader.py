"""The Fleet screen's aggregates (`fetch.ScreenReader`: PromQL computes free and flagged cards, card
counts and mean utilization per host) against the full refresh (`fetch.refresh`: every card's values,
judged in Python), on a real Prometheus with a backfilled TSDB holding every case the rules know:
hot by the default and by a card's own threshold, over cap, ECC rows, a pod holding an idle card, a
card gone for the last 10 minutes, a scale-out port down, a target down."""

from __future__ import annotations

import math
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gaudi_tui.core.fleet import fetch
from gaudi_tui.core.fleet import metrics as m
from gaudi_tui.core.fleet.model import Overview
from gaudi_tui.core.fleet.prometheus import PrometheusClient
from tests import required
from tests.fleet.stack import start_prometheus, stop

pytestmark = pytest.mark.slow

GIB = 1024**3
STEP_S = 60
SPAN_S = 3600
HOSTS = ("h0:41612", "h1:41612", "h2:41612", "h3:41612")


def card_values(host: int, card: int) -> dict[str, float]:
    values = {
        m.UTILIZATION.name: float(10 * card + host),
        m.MEMORY_USED.name: (0.5 if card % 2 else 90.0) * GIB,
        m.MEMORY_TOTAL.name: 96.0 * GIB,
        m.POWER.name: 200_000.0,
        m.POWER_LIMIT.name: 600_000.0,
        m.TEMP_ONCHIP.name: 40.0,
        m.DEVICE_CONFIG.name: 1.0,
    }
    if (host, card) == (0, 1):
        values[m.TEMP_ONCHIP.name] = 95.0  # past the default 90 °C
    if (host, card) == (0, 3):
        values[m.TEMP_ONCHIP.name], values[m.TEMP_SLOWDOWN.name] = 80.0, 75.0  # past its own threshold
    if (host, card) == (0, 5):
        values[m.TEMP_SLOWDOWN.name] = 0.0  # no threshold given: the default applies
    if (host, card) == (1, 0):
        values[m.POWER.name] = 650_000.0
    if (host, card) == (1, 2):
        values[m.PENDING_ROWS.name] = 1.0
    return values


def write(path: Path, end: int) -> None:
    stamps = range(end - SPAN_S, end + 1, STEP_S)
    lines: dict[str, list[str]] = {}
    for host, instance in enumerate(HOSTS[:3]):
        for card in range(8):
            pod = 'pod_namespace="ml",pod_name="train-0",' if (host, card) == (2, 1) else ""
            labels = f'{pod}id="{card}",instance="{instance}",job="gaudi",UUID="u-{host}-{card}"'
            gone = (host, card) == (2, 7)  # card 7 of h2 stopped reporting 10 minutes ago
            for name, value in card_values(host, card).items():
                moves = name == m.MEMORY_USED.name  # HBM use moves a little every minute, as a card's does
                lines.setdefault(name, []).extend(
                    f"{name}{{{labels}}} {value + (t // STEP_S % 5) * 2**20 * moves} {t}"
                    for t in stamps
                    if not (gone and t > end - 600)
                )
            port = 0.0 if (host, card) == (1, 4) else 1.0
            nic = f'{m.NIC_PORT_STATUS.name}{{{labels},port="8",port_type="external"}}'
            lines.setdefault(m.NIC_PORT_STATUS.name, []).extend(f"{nic} {port} {t}" for t in stamps)
    for host, instance in enumerate(HOSTS):
        lines.setdefault("up", []).extend(
            f'up{{instance="{instance}",job="gaudi"}} {0 if host == 3 else 1} {t}' for t in stamps
        )
    with path.open("w") as out:
        for name, rows in lines.items():
            out.write(f"# TYPE {name} gauge\n" + "\n".join(rows) + "\n")
        out.write("# EOF\n")


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, float]]:
    required.tools("prometheus", "prometheus", "promtool")
    workdir = tmp_path_factory.mktemp("reader")
    end = int(time.time()) // STEP_S * STEP_S - STEP_S
    write(workdir / "fleet.om", end)
    done = subprocess.run(
        [
            "promtool",
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            "-q",
            str(workdir / "fleet.om"),
            str(workdir / "tsdb"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    config = "global:\n  scrape_interval: 1h\nscrape_configs: []\n"
    process, url = start_prometheus(config, workdir)
    try:
        yield url, float(end)
    finally:
        stop(process)


def same(ours: Overview, theirs: Overview) -> None:
    assert [h.name for h in ours.hosts] == [h.name for h in theirs.hosts]
    for a, b in zip(ours.hosts, theirs.hosts, strict=True):
        assert (a.mean_util is None) == (b.mean_util is None)
        assert a.mean_util is None or b.mean_util is None or math.isclose(a.mean_util, b.mean_util)
        assert a._replace(mean_util=None) == b._replace(mean_util=None)
    assert ours.absent == theirs.absent and ours.problems == theirs.problems


def test_the_aggregates_judge_every_host_as_the_full_refresh_does(backfilled: tuple[str, float]) -> None:
    url, at = backfilled
    client = PrometheusClient(url, timeout=10)
    full = fetch.refresh(client, at)
    reader = fetch.ScreenReader(client, at)
    overview, cards = reader.refresh([], mean_util=True)
    same(overview, full.overview())
    hosts = {h.name: h for h in overview.hosts}
    assert hosts["h0:41612"].flags == ("hot 2",)
    assert hosts["h1:41612"].flags == ("over cap 1", "ECC rows 1", "scale-out down 1")
    assert hosts["h1:41612"].scale_out_down == (4,) and not hosts["h1:41612"].fits(16)
    assert hosts["h2:41612"].flags == ("1 missing",) and hosts["h2:41612"].free_ids == (3, 5)
    assert hosts["h3:41612"].state == "down" and hosts["h3:41612"].flags == ("down",)
    assert cards == {}
    # Thresholds are reported here: `hot` keeps comparing with them; where none is, the default alone.
    assert reader.queries([])["hot"] == fetch.OVERVIEW_QUERIES["hot"]
    reader.present = {m.TEMP_ONCHIP.name}
    assert reader.queries([])["hot"] == fetch.HOT_DEFAULT_QUERY


def test_cards_of_the_rows_on_screen_equal_the_full_refresh(backfilled: tuple[str, float]) -> None:
    url, at = backfilled
    client = PrometheusClient(url, timeout=10)
    full = {h.name: h for h in fetch.refresh(client, at).hosts}
    reader = fetch.ScreenReader(client, at)
    _, cards = reader.refresh(["h0:41612", "h3:41612"])
    assert cards == {name: full[name] for name in ("h0:41612", "h3:41612")}
    scrolled, problems = reader.cards(["h1:41612", "h2:41612"])  # rows scrolled into view
    assert problems == [] and scrolled == {name: full[name] for name in ("h1:41612", "h2:41612")}


def test_the_free_cards_answer_stays_the_same_while_hbm_use_moves(backfilled: tuple[str, float]) -> None:
    """The free cards come as one number per host (a bit per card id), not each free card's HBM
    use: from one minute to the next the HBM use moves, no card is taken or freed, and the answer
    is the same (the client's last reading of it serves again)."""
    url, at = backfilled
    client = PrometheusClient(url, timeout=10)
    used = [client.query(f"sum({m.MEMORY_USED.name})", t)[0].value for t in (at - STEP_S, at)]
    assert used[0] != used[1]
    free = [
        sorted((s.labels["instance"], s.value) for s in client.query(fetch.OVERVIEW_QUERIES["free"], t))
        for t in (at - STEP_S, at)
    ]
    assert free[0] == free[1] == [("h0:41612", 0b10101010), ("h1:41612", 0b10101010), ("h2:41612", 0b101000)]


def test_the_rows_cards_from_the_same_answers_are_not_built_again_and_come_as_a_copy(
    backfilled: tuple[str, float],
) -> None:
    """A 15 s scrape read every 5 s gives the same answers two refreshes in three: the rows' hosts
    are the last ones (not built again), in a new dict, since the screen adds scrolled rows' cards
    to the one it holds."""
    url, at = backfilled
    reader = fetch.ScreenReader(PrometheusClient(url, timeout=10), at)
    _, first = reader.refresh(["h0:41612"])
    held = first["h0:41612"]
    first["h1:41612"] = held  # what the screen does with the cards of a row scrolled into view
    _, again = reader.refresh(["h0:41612"])
    assert again == {"h0:41612": held} and again["h0:41612"] is held


def test_a_labelled_answer_that_did_not_change_is_not_read_again(backfilled: tuple[str, float]) -> None:
    """`query` (the rows' HBM use, with each card's identity labels) keeps its last reading as
    `pair_values` does: the same answer but for its evaluation time gives the same samples, in a
    new list; an answer that changed is read anew."""
    url, at = backfilled
    client = PrometheusClient(url, timeout=10)
    promql = fetch.card_queries(["h0:41612"])[m.MEMORY_USED.name]
    first = client.query(promql, at)
    again = client.query(promql, at)
    assert len(first) == 8 and again is not first and all(a is b for a, b in zip(first, again, strict=True))
    moved = client.query(promql, at - STEP_S)  # the HBM use a minute before
    assert sorted(s.value for s in moved) != sorted(s.value for s in first)
