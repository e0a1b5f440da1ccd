"""Data files shipped in the package: real recorded `hl-smi` outputs (see hl-smi/SOURCES.md), and
the Prometheus alerting rules for a fleet (`gaudi-tui fleet --rules` prints them)."""

from __future__ import annotations

from pathlib import Path

HLSMI_SAMPLES = Path(__file__).resolve().parent / "hl-smi"
ALERT_RULES = Path(__file__).resolve().parent / "prometheus" / "gaudi-tui-alerts.yml"
