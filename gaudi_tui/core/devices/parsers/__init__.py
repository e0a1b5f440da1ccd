"""Parsers: every form of hl-smi output (table, `-Q` CSV, `-L`/`-q` detail, topo, NIC link) → a Reading. Pure text in, values out; they never raise."""
