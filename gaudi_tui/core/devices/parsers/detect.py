"""Tell which hl-smi output a text is (table, CSV, detail, topo, NIC link) and parse it.

This is the "send me your hl-smi output" path: `gaudi-tui devices --input FILE` reads any of the
forms gaudi-tui knows, pasted or saved, and says so when it cannot.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from gaudi_tui.core.devices.parsers.parse_csv import header_fields, parse_csv, split_cells
from gaudi_tui.core.devices.parsers.parse_detail import looks_like_detail, parse_detail
from gaudi_tui.core.devices.parsers.parse_nic import looks_like_nic, parse_nic
from gaudi_tui.core.devices.parsers.parse_table import looks_like_table, parse_table
from gaudi_tui.core.devices.parsers.parse_topo import looks_like_topo, parse_topo
from gaudi_tui.core.devices.reading import Reading
from gaudi_tui.core.untrusted.data import Untrusted
from gaudi_tui.core.untrusted.files import read_bounded

INPUT_LIMIT = 16 << 20
"""The most a saved hl-smi output may hold (a 8-card `-q` detail is about 40 KiB)."""
FORMS = "the hl-smi table, `-Q … -f csv` output, `-L`/`-q` detail, `topo -c -N` or `-n link`"


def _looks_like_csv(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return False
    if header_fields(lines[0]) is not None and "," in lines[0]:
        return True
    widths = {len(split_cells(line)) for line in lines[:8]}
    return len(widths) == 1 and widths.pop() >= 2


def parse_any(text: str, csv_fields: Sequence[str] | None = None) -> Reading:
    """Parse `text` as whichever hl-smi output it is; never raises."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    if not text.strip():
        return Reading(kind="empty", errors=("the input is empty",))
    try:
        if looks_like_detail(text):
            return parse_detail(text)
        if looks_like_table(text):
            return parse_table(text)
        if looks_like_topo(text):
            return parse_topo(text)
        if looks_like_nic(text):
            return parse_nic(text)
        if csv_fields is not None or _looks_like_csv(text):
            return parse_csv(text, csv_fields)
    except Exception as error:  # a parser bug must not take the caller down
        return Reading(
            kind="unknown", errors=(f"could not parse the input ({type(error).__name__}: {error})",)
        )
    first = text.strip().splitlines()[0][:60]
    return Reading(
        kind="unknown", errors=(f"not an hl-smi output gaudi-tui knows (starts {first!r}); expected {FORMS}",)
    )


class InputError(Exception):
    """A saved output could not be read; the message names the file and why."""


def read_inputs(names: Sequence[str], csv_fields: Sequence[str] | None = None) -> Reading:
    """Saved hl-smi outputs (`-` is stdin), each auto-detected, merged into one Reading — what
    `devices --input` and `exporter --input` read."""
    from gaudi_tui.core.devices.reading import merge

    readings = []
    for name in names:
        try:
            if name == "-":
                text = sys.stdin.read()
            else:
                text = read_bounded(Path(name), limit=INPUT_LIMIT).decode("utf-8", "replace")
        except OSError as error:
            raise InputError(f"cannot read {name}: {error.strerror}") from error
        except Untrusted as error:
            raise InputError(f"cannot read {name}: {error}") from error
        readings.append(parse_any(text, csv_fields))
    return merge(readings)
