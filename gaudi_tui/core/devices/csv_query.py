"""The `hl-smi -Q` query the live feed sends: its fields and its argv.

Apart from the parsers and the poller, so that the panel can start its first query before Textual
loads (`early_query.py`) without importing either.
"""

from __future__ import annotations

from collections.abc import Sequence

# What the live poller asks for. `power.max` is newer than the documented list: BASIC_FIELDS is the
# fallback when an older hl-smi refuses it.
QUERY_FIELDS: tuple[str, ...] = (
    "index",
    "module_id",
    "bus_id",
    "name",
    "uuid",
    "driver_version",
    "utilization.aip",
    "memory.used",
    "memory.total",
    "power.draw",
    "power.max",
    "temperature.aip",
    "ecc.errors.uncorrected.volatile.total",
)
BASIC_FIELDS: tuple[str, ...] = tuple(f for f in QUERY_FIELDS if f != "power.max")


def query_args(fields: Sequence[str], interval: int | None = None) -> list[str]:
    """hl-smi's arguments for `fields` once, or every `interval` seconds (`-l`)."""
    args = ["-Q", ",".join(fields), "-f", "csv,noheader,nounits"]
    return args + ["-l", str(interval)] if interval else args
