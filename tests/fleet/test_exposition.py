"""The /metrics reader is tolerant: each variant a real scrape may take gives the same cards.

No public text of a live scrape of Intel's exporter exists, so the variants are built from our
exporter's own output of a real hl-smi sample, changed the ways the reference says a scrape may
differ (label order, empty or missing HELP, labels Prometheus and prometheus-operator add)."""

from __future__ import annotations

import re

import pytest
from prometheus_client import generate_latest

from gaudi_tui.core.devices.parsers.detect import parse_any
from gaudi_tui.core.fleet import fetch
from gaudi_tui.core.fleet.exporter import KernelFacts, registry_for
from gaudi_tui.core.fleet.exposition import parse_exposition
from gaudi_tui.core.fleet.model import Fleet
from tests.conftest import SAMPLES
from tests.fleet.stack import CARD_VALUES, expected_cards

SAMPLE = "gaudi2-hl225-x8-1.20.0-busy-table.txt"
OPERATOR = 'container="gaudi-metric-exporter",endpoint="habana-metrics",instance="10.0.0.7:41611",job="habana-exporter",namespace="monitoring",pod="habana-exporter-x7k2p",service="habana-exporter"'


def ours() -> str:
    snapshot = parse_any((SAMPLES / SAMPLE).read_text()).to_snapshot("file")
    return generate_latest(registry_for(lambda: snapshot, KernelFacts("/nonexistent"))).decode()


def cards(fleet: Fleet, host: str) -> list[dict[str, object]]:
    found = next(h for h in fleet.hosts if h.name == host)
    return [{k: getattr(c, k) for k in CARD_VALUES} for c in found.cards]


def _reverse_labels(line: str) -> str:
    match = re.match(r"^(\w+)\{(.*)\} (.*)$", line)
    if not match:
        return line
    labels = re.findall(r'\w+="[^"]*"', match.group(2))
    return f"{match.group(1)}{{{','.join(reversed(labels))}}} {match.group(3)}"


def _add_labels(line: str, extra: str) -> str:
    return line.replace("{", "{" + extra + ",", 1) if not line.startswith("#") and "{" in line else line


VARIANTS = {
    "as served": (lambda text: text, "file"),
    "labels in reverse order": (
        lambda text: "\n".join(_reverse_labels(x) for x in text.splitlines()),
        "file",
    ),
    "empty HELP": (lambda text: re.sub(r"^# HELP (\w+) .*$", r"# HELP \1 ", text, flags=re.M), "file"),
    "no HELP nor TYPE": (
        lambda text: "\n".join(x for x in text.splitlines() if not x.startswith("#")),
        "file",
    ),
    "prometheus-operator labels": (
        lambda text: "\n".join(_add_labels(x, OPERATOR) for x in text.splitlines()),
        "10.0.0.7:41611",
    ),
    "OpenMetrics with timestamps and EOF": (
        lambda text: (
            "\n".join(x + " 1700000000" if not x.startswith("#") else x for x in text.splitlines())
            + "\n# EOF\n"
        ),
        "file",
    ),
    "lines shuffled": (lambda text: "\n".join(sorted(text.splitlines(), reverse=True)), "file"),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_gives_the_replayed_cards(variant: str) -> None:
    change, host = VARIANTS[variant]
    fleet = fetch.from_text(change(ours()), "saved", default_host="file")
    assert [h.name for h in fleet.hosts] == [host]
    assert cards(fleet, host) == expected_cards(SAMPLE)
    assert not any("could not be read" in p for p in fleet.problems)


def test_instance_is_the_host_and_id_the_card() -> None:
    """Two exporters in one text, same (unknown) serial on every card: `instance` + `id` tell them apart."""
    lines = [x for x in ours().splitlines() if not x.startswith("#")]
    text = "\n".join(
        [_add_labels(x, 'instance="a:41612",job="gaudi"') for x in lines]
        + [_add_labels(x, 'instance="b:41611",job="gaudi"') for x in lines]
    )
    fleet = fetch.from_text(text, "saved", default_host="unused")
    assert [h.name for h in fleet.hosts] == ["a:41612", "b:41611"]
    assert cards(fleet, "b:41611") == expected_cards(SAMPLE)
    assert [c.id for c in fleet.hosts[0].cards] == list(range(8))


def test_intel_style_labels_and_pods() -> None:
    """Labels as Intel's exporter writes them (reference: serial in `Serial` and `device`, a pod)."""
    labels = (
        'Serial="AN40030989",UUID="01P0-HL2080A0-15-TNBS72-03-09-04",device="AN40030989",id="3",'
        'fit="1.13.0",spi="1.13.0-fw-48.0.1",driver="1.18.0-ee698fb",pod_namespace="team-a",pod_name="llm-0"'
    )
    text = (
        "# HELP habanalabs_memory_used_bytes \n# TYPE habanalabs_memory_used_bytes gauge\n"
        f"habanalabs_memory_used_bytes{{{labels}}} 1024\n"
        f"habanalabs_utilization{{{labels}}} 0\n"
    )
    host = fetch.from_text(text, "saved", default_host="node").hosts[0]
    card = host.cards[0]
    assert (card.id, card.serial, card.uuid, card.pod) == (
        3,
        "AN40030989",
        "01P0-HL2080A0-15-TNBS72-03-09-04",
        "team-a/llm-0",
    )
    assert not card.free and host.free_ids == ()  # a pod holds it even with almost no HBM in use


def test_unreadable_lines_are_skipped_and_reported() -> None:
    text = (
        ours()
        + 'habanalabs_utilization{id="9" 5\nnot a metric line at all\nhabanalabs_power_mW{id="9"} watts\n'
    )
    parsed = parse_exposition(text)
    assert len(parsed.bad_lines) == 3
    fleet = fetch.from_text(text, "saved", default_host="file")
    assert cards(fleet, "file") == expected_cards(SAMPLE)
    assert any("3 line(s) of the input could not be read" in p for p in fleet.problems)


def test_escaped_label_values() -> None:
    parsed = parse_exposition('habanalabs_utilization{pod_name="a\\"b\\\\c",id="0"} 7\n')
    sample = parsed.samples["habanalabs_utilization"][0]
    assert sample.labels["pod_name"] == 'a"b\\c' and sample.value == 7


def test_text_without_gaudi_series_says_so() -> None:
    fleet = fetch.from_text("# HELP go_goroutines x\ngo_goroutines 12\n", "saved.txt", default_host="x")
    assert fleet.hosts == () and fleet.problems == ("no habanalabs_* card series in saved.txt",)
