"""`hl-smi -n link [-i <bus id>]` (NIC port states, optionally under `=== <bus id> ===`) → a Reading."""

from __future__ import annotations

import re

from gaudi_tui.core.devices.reading import Reading

_CARD = re.compile(r"^=+\s*(\S+)\s*=+$")
_PORT = re.compile(r"^port\s+(\d+)\s*:\s*(\S+)", re.IGNORECASE)


def looks_like_nic(text: str) -> bool:
    return bool(re.search(r"^\s*port\s+\d+\s*:", text, re.MULTILINE | re.IGNORECASE))


def parse_nic(text: str) -> Reading:
    ports: dict[str, dict[int, str]] = {}
    card = "?"
    errors: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if header := _CARD.match(line):
            card = header.group(1)
        elif port := _PORT.match(line):
            ports.setdefault(card, {})[int(port.group(1))] = port.group(2).upper()
        else:
            errors.append(f"unreadable NIC line {line[:60]!r}")
    if not ports:
        errors.append("no `port N: STATE` lines found")
    return Reading(kind="nic-link", nic_ports=ports, errors=tuple(errors))
