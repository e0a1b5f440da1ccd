"""Reading a saved /metrics text (Intel's exporter, ours, or a Prometheus federate dump).

Tolerant on purpose: no public scrape of Intel's exporter exists, so labels may come in any order,
HELP may be empty or missing, Prometheus / prometheus-operator may have added `instance`, `job`,
`namespace`, `pod`, `container`, `endpoint`, `service`, and OpenMetrics' `# EOF` may end it.
A line that cannot be read is skipped and counted, never fatal.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from gaudi_tui.core.fleet.samples import NAME, Sample, SamplesByMetric

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


@dataclass
class Exposition:
    samples: SamplesByMetric = field(default_factory=dict)
    bad_lines: list[int] = field(default_factory=list)
    """1-based numbers of the lines that could not be read."""

    def problem(self) -> str | None:
        if not self.bad_lines:
            return None
        shown = ", ".join(str(n) for n in self.bad_lines[:5])
        more = f" and {len(self.bad_lines) - 5} more" if len(self.bad_lines) > 5 else ""
        return f"{len(self.bad_lines)} line(s) of the input could not be read (line {shown}{more}); skipped"


def _unescape(text: str) -> str:
    return re.sub(r"\\[\\\"n]", lambda match: _ESCAPES[match.group(0)], text)


def _labels(text: str) -> dict[str, str] | None:
    labels: dict[str, str] = {}
    position = 0
    text = text.strip()
    while position < len(text):
        match = _LABEL.match(text, position)
        if match is None:
            return None
        labels[match.group(1)] = _unescape(match.group(2))
        position = match.end()
    return labels


def _value(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse_exposition(text: str) -> Exposition:
    """Every sample of a Prometheus text (0.0.4) or OpenMetrics exposition, grouped by metric."""
    result = Exposition()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        labels = _labels(match.group(2) or "") if match else None
        value = _value(match.group(3)) if match else None
        if match is None or labels is None or value is None:
            result.bad_lines.append(number)
            continue
        name = match.group(1)
        labels[NAME] = name
        if not math.isnan(value):
            result.samples.setdefault(name, []).append(Sample(labels, value))
    return result
