"""`hl-smi -n link` and `hl-smi -n ports` (optionally under `=== <bus id> ===` lines) → a Reading.

`-n link -i <bus>` prints one `port N: UP|DOWN` line per port (real sample:
gaudi2e-nic-link-1.24.0.txt); `-n ports -i <bus>` prints `port N: internal|external` (the form
Intel's health screen parses, HabanaAI/Setup_and_Install utils/intel_gaudi_health_screen/IGNodes.py).
Ports of an output without a `===` line are filed under the card "?" (the caller knows which
card it asked about).
"""

from __future__ import annotations

import re

from gaudi_tui.core.devices.reading import Reading

NO_CARD = "?"
_CARD = re.compile(r"^=+\s*(\S+)\s*=+$")
_PORT = re.compile(r"^port\s+(\d{1,9})\s*:\s*(\S+)", re.IGNORECASE)
_TYPES = ("internal", "external")


def looks_like_nic(text: str) -> bool:
    return bool(re.search(r"^\s*port\s+\d+\s*:", text, re.MULTILINE | re.IGNORECASE))


def parse_nic(text: str) -> Reading:
    states: dict[str, dict[int, str]] = {}
    types: dict[str, dict[int, str]] = {}
    card = NO_CARD
    errors: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if header := _CARD.match(line):
            card = header.group(1)
        elif port := _PORT.match(line):
            value = port.group(2)
            if value.lower() in _TYPES:
                types.setdefault(card, {})[int(port.group(1))] = value.lower()
            else:
                states.setdefault(card, {})[int(port.group(1))] = value.upper()
        else:
            errors.append(f"unreadable NIC line {line[:60]!r}")
    if not (states or types):
        errors.append("no `port N: STATE` lines found")
    kind = "nic-link" if states else "nic-ports"
    return Reading(kind=kind, nic_ports=states, nic_port_types=types, errors=tuple(errors))
