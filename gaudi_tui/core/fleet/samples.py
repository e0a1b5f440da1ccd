"""One labelled value, as both a /metrics text and a Prometheus query answer give them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

NAME = "__name__"


@dataclass(frozen=True)
class Sample:
    labels: Mapping[str, str]
    value: float

    @property
    def name(self) -> str:
        return self.labels.get(NAME, "")


SamplesByMetric = dict[str, list[Sample]]
"""Metric name → its samples (the name is also the `__name__` label)."""
