"""One labelled value, as both a /metrics text and a Prometheus query answer give them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

NAME = "__name__"


class Sample(NamedTuple):
    """A named tuple, not a dataclass: a refresh of 4,096 cards makes ~30,000 of them."""

    labels: Mapping[str, str]
    value: float

    @property
    def name(self) -> str:
        return self.labels.get(NAME, "")


CardValue = tuple[str, str, float]
"""(instance, card id, value): one card's value of one metric, the shape of a refresh's answers."""

HostValue = tuple[str, str, float]
"""(instance, job, value): one host's value of a `… by (instance, job)` query."""

SamplesByMetric = dict[str, list[Sample]]
"""Metric name → its samples (the name is also the `__name__` label)."""
